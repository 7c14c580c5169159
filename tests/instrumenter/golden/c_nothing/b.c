/* Nothing here is selected: this file must stay byte-identical. */
int selected(int x);
int unrelated(int x) { return selected(x) + 2; }
