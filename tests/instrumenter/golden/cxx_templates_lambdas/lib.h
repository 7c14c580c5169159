// A template selected by its definition, in a header: the header is edited.
namespace lib {
int load(int);
template <class T> struct Box {
  T value;
  T get() const { return value.fetch() + load(1); }
};
}  // namespace lib
