int selected(int x) {
  return x + 1;
}
