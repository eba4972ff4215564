/*
 * reporter/util/demangle.h: C++ names as people read them
 * (_ZN3foo3barEv -> foo::bar()), by libstdc++'s __cxa_demangle.
 */
#ifndef HL_REPORTER_DEMANGLE_H
#define HL_REPORTER_DEMANGLE_H

/* The demangled form of mangled (malloc'd; the caller frees it), or NULL
 * when it is not a valid mangled name or libstdc++ cannot be loaded (then
 * the name is shown as it is). Thread-safe. */
char *hl_demangle(const char *mangled);

#endif /* HL_REPORTER_DEMANGLE_H */
