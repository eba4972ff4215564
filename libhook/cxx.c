/*
 * libhook/cxx.c: C++ operator new and delete, every variant, in C.
 *
 * Written with their mangled names so the hook needs no libstdc++ of its
 * own: a program that calls operator new has libstdc++ loaded, and from it we
 * take std::get_new_handler and the bad_alloc thrower at the moment they are
 * needed. Built with -fexceptions so the exception unwinds through us.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "fastpath.h"

typedef void (*new_handler_fn)(void);

static new_handler_fn current_new_handler(void)
{
	new_handler_fn (*get)(void) =
		(new_handler_fn (*)(void))dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv");
	return get ? get() : NULL;
}

HL_COLD static void throw_bad_alloc(void)
{
	void (*thrower)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv");
	if (thrower)
		thrower();
	hl_warn("operator new: out of memory and no std::bad_alloc to throw; aborting", NULL);
	abort();
}

/* The standard's loop: try, call the new_handler, try again; no handler
 * means std::bad_alloc (or NULL for the nothrow forms). */
static void *new_slow(size_t n, size_t alignment, unsigned kind, bool nothrow)
{
	for (;;) {
		void *p = hl_allocate(n, alignment, kind);
		if (p != NULL)
			return p;
		new_handler_fn handler = current_new_handler();
		if (handler == NULL) {
			if (nothrow)
				return NULL;
			throw_bad_alloc();
		}
		handler();
	}
}

static inline void *new_impl(size_t n, size_t alignment, unsigned kind, bool nothrow)
{
	void *p = alignment <= HL_ALIGN ? hl_malloc_fast(n, kind) : hl_allocate(n, alignment, kind);
	if (hl_likely(p != NULL))
		return p;
	return new_slow(n, alignment < HL_ALIGN ? HL_ALIGN : alignment, kind, nothrow);
}

/* operator new(size_t), new[](size_t) and their nothrow forms. */
HL_API void *_Znwm(size_t n);
HL_API void *_Znam(size_t n);
HL_API void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
HL_API void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
/* C++17 aligned forms. */
HL_API void *_ZnwmSt11align_val_t(size_t n, size_t alignment);
HL_API void *_ZnamSt11align_val_t(size_t n, size_t alignment);
HL_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag);
HL_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag);
/* operator delete: plain, sized (C++14), nothrow, aligned, sized+aligned. */
HL_API void _ZdlPv(void *p);
HL_API void _ZdaPv(void *p);
HL_API void _ZdlPvm(void *p, size_t n);
HL_API void _ZdaPvm(void *p, size_t n);
HL_API void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
HL_API void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);
HL_API void _ZdlPvSt11align_val_t(void *p, size_t alignment);
HL_API void _ZdaPvSt11align_val_t(void *p, size_t alignment);
HL_API void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t alignment);
HL_API void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t alignment);
HL_API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag);
HL_API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag);

void *_Znwm(size_t n) { return new_impl(n, HL_ALIGN, HL_KIND_NEW, false); }
void *_Znam(size_t n) { return new_impl(n, HL_ALIGN, HL_KIND_NEW_ARRAY, false); }
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag) { return new_impl(n, HL_ALIGN, HL_KIND_NEW, true); }
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag) { return new_impl(n, HL_ALIGN, HL_KIND_NEW_ARRAY, true); }
void *_ZnwmSt11align_val_t(size_t n, size_t alignment) { return new_impl(n, alignment, HL_KIND_NEW_ALIGNED, false); }
void *_ZnamSt11align_val_t(size_t n, size_t alignment) { return new_impl(n, alignment, HL_KIND_NEW_ARRAY_ALIGNED, false); }
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag) { return new_impl(n, alignment, HL_KIND_NEW_ALIGNED, true); }
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag) { return new_impl(n, alignment, HL_KIND_NEW_ARRAY_ALIGNED, true); }

void _ZdlPv(void *p) { hl_free_fast(p, HL_KIND_NEW); }
void _ZdaPv(void *p) { hl_free_fast(p, HL_KIND_NEW_ARRAY); }
void _ZdlPvm(void *p, size_t n) { hl_free_fast_sized(p, HL_KIND_NEW, n); }
void _ZdaPvm(void *p, size_t n) { hl_free_fast_sized(p, HL_KIND_NEW_ARRAY, n); }
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag) { hl_release(p, HL_KIND_NEW); }
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag) { hl_release(p, HL_KIND_NEW_ARRAY); }
void _ZdlPvSt11align_val_t(void *p, size_t alignment) { hl_release(p, HL_KIND_NEW_ALIGNED); }
void _ZdaPvSt11align_val_t(void *p, size_t alignment) { hl_release(p, HL_KIND_NEW_ARRAY_ALIGNED); }
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t alignment) { hl_release_sized(p, HL_KIND_NEW_ALIGNED, n); }
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t alignment) { hl_release_sized(p, HL_KIND_NEW_ARRAY_ALIGNED, n); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag) { hl_release(p, HL_KIND_NEW_ALIGNED); }
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag) { hl_release(p, HL_KIND_NEW_ARRAY_ALIGNED); }
