/* libm, loaded at its first use. Only SQLite calls it, for its SQL math functions (acos() ...
 * trunc()), which agentjail's queries do not use; linked as a shared library it was opened,
 * mapped and relocated at every start of every agentjail process (common/lazylib.h). Each
 * function below loads libm.so.6 the first time one is called and goes on to its own. With
 * STATIC_LIBS=0 libm is linked as usual and this file is empty. */
#include "common/lazylib.h"

#if AJ_LAZY_LIBS

#include <math.h>
#include <pthread.h>
#include <stdio.h>

/* X: one argument; X2: two. */
#define AJ_LIBM_FUNCTIONS(X, X2)                                                                   \
	X(acos) X(acosh) X(asin) X(asinh) X(atan) X(atanh) X(cos) X(cosh) X(exp) X(log) X(sin)     \
		X(sinh) X(sqrt) X(tan) X(tanh) X(trunc) X2(atan2) X2(fmod) X2(pow)

enum {
#define INDEX(name) FN_##name,
	AJ_LIBM_FUNCTIONS(INDEX, INDEX)
#undef INDEX
	N_FUNCTIONS
};

static const char *const names[N_FUNCTIONS] = {
#define NAME(name) [FN_##name] = #name,
	AJ_LIBM_FUNCTIONS(NAME, NAME)
#undef NAME
};

static void *fns[N_FUNCTIONS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty once loaded */

static void load(void)
{
	void *h = aj_lazylib_open("libm.so.6", load_error, sizeof load_error);

	if (h)
		(void)aj_lazylib_bind(h, "libm.so.6", names, fns, N_FUNCTIONS, load_error,
				      sizeof load_error);
}

static void need(void)
{
	pthread_once(&once, load);
	if (load_error[0])
		aj_lazylib_fail(load_error);
}

#define FORWARD(name)                                                                              \
	double name(double x)                                                                      \
	{                                                                                          \
		need();                                                                            \
		return ((double (*)(double))fns[FN_##name])(x);                                    \
	}
#define FORWARD2(name)                                                                             \
	double name(double x, double y)                                                            \
	{                                                                                          \
		need();                                                                            \
		return ((double (*)(double, double))fns[FN_##name])(x, y);                         \
	}
AJ_LIBM_FUNCTIONS(FORWARD, FORWARD2)

#endif
