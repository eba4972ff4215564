// tests/run/progs/leak_cxx.cpp: a C++ `new` leak; the report must show the
// demangled name ns::make_widget(int).
namespace ns {
struct Widget {
	int values[10];
};

__attribute__((noinline)) Widget *make_widget(int seed)
{
	Widget *w = new Widget; // LEAK-CXX
	w->values[0] = seed;
	return w;
}
} // namespace ns

int main()
{
	ns::Widget *volatile w = ns::make_widget(3);
	w = nullptr;
	return 0;
}
