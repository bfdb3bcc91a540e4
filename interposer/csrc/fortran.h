/*
 * Helpers of the generated Fortran bindings. Open MPI's Fortran library
 * calls PMPI_X directly, so the C wrappers would miss Fortran programs;
 * MPICH's calls the C MPI_X, so the C wrappers would record its own frame
 * as the call site. Wrapping the Fortran symbols (which call PMPI_X) keeps
 * the application's caller under both.
 *
 * Fortran passes handles as MPI_Fint and marks MPI_IN_PLACE, MPI_BOTTOM
 * and MPI_STATUS(ES)_IGNORE by the addresses of common blocks. Open MPI
 * names them mpi_fortran_<x>_ (and three other spellings); MPICH keeps
 * their addresses in MPIR_F_MPI_IN_PLACE and MPIR_F_MPI_BOTTOM (its
 * Fortran library's) and MPI_F_STATUS(ES)_IGNORE. They are declared weak:
 * absent (a C program), their address is null.
 */
#ifndef IPR_FORTRAN_H
#define IPR_FORTRAN_H
#if defined(OPEN_MPI) || defined(MPICH)
#define IPR_FORTRAN 1
#include "support.h"

#ifdef OPEN_MPI
#define IPR_FSYMS(x) \
    extern int x##_ __attribute__((weak)); \
    extern int x __attribute__((weak)); \
    extern int x##__ __attribute__((weak));
IPR_FSYMS(mpi_fortran_in_place)
IPR_FSYMS(mpi_fortran_bottom)
IPR_FSYMS(mpi_fortran_status_ignore)
IPR_FSYMS(mpi_fortran_statuses_ignore)
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
extern int MPI_FORTRAN_STATUS_IGNORE __attribute__((weak));
extern int MPI_FORTRAN_STATUSES_IGNORE __attribute__((weak));

#define IPR_IS(p, x, X) ((p) != NULL && ((p) == (void *)&x##_ || (p) == (void *)&x || (p) == (void *)&x##__ || (p) == (void *)&X))
#define IPR_F_IN_PLACE(p) IPR_IS(p, mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)
#define IPR_F_BOTTOM(p) IPR_IS(p, mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)
#define IPR_F_STATUS_IGNORED(p) IPR_IS(p, mpi_fortran_status_ignore, MPI_FORTRAN_STATUS_IGNORE)
#define IPR_F_STATUSES_IGNORED(p) IPR_IS(p, mpi_fortran_statuses_ignore, MPI_FORTRAN_STATUSES_IGNORE)
#else
/* Set by MPICH's Fortran initialization (its mpirinitf), null before. */
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern void *MPIR_F_MPI_BOTTOM __attribute__((weak));
static inline int ipr_mpich_marker(const void *p, void *const *marker) {
    return p != NULL && marker != NULL && p == *marker;
}
#define IPR_F_IN_PLACE(p) ipr_mpich_marker(p, &MPIR_F_MPI_IN_PLACE)
#define IPR_F_BOTTOM(p) ipr_mpich_marker(p, &MPIR_F_MPI_BOTTOM)
/* MPI_F_STATUS(ES)_IGNORE, compared below, are MPICH's markers. */
#define IPR_F_STATUS_IGNORED(p) 0
#define IPR_F_STATUSES_IGNORED(p) 0
#endif

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be an int for the Fortran bindings");
/* Fortran MPI_STATUS_SIZE: the C status in MPI_Fint units (6 in Open MPI 4.1, 5 in MPICH 4). */
#define IPR_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

static inline void *ipr_fbuf(void *p) {
    if (IPR_F_IN_PLACE(p)) return MPI_IN_PLACE;
    if (IPR_F_BOTTOM(p)) return MPI_BOTTOM;
    return p;
}

static inline int ipr_fstatus_ignored(MPI_Fint *s) {
    return (void *)s == (void *)MPI_F_STATUS_IGNORE || IPR_F_STATUS_IGNORED((void *)s);
}

/* Longest Fortran string argument passed on (file names, data
 * representations), bytes with the terminating NUL; longer ones are cut. */
#define IPR_FSTRING_MAX 4096

/* A blank-padded Fortran string of `len` characters as a C string in `out`
 * (IPR_FSTRING_MAX bytes): trailing blanks dropped. */
static inline void ipr_fstring(const char *f, int len, char *out) {
    if (f == NULL || len < 0) len = 0;
    if (len > IPR_FSTRING_MAX - 1) len = IPR_FSTRING_MAX - 1;
    while (len > 0 && f[len - 1] == ' ') len--;
    memcpy(out, f, (size_t)len);
    out[len] = '\0';
}

static inline MPI_Request *ipr_freqs(MPI_Fint n, const MPI_Fint *f) {
    MPI_Request *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    if (c == NULL) abort(); /* the call cannot be made without it */
    for (MPI_Fint i = 0; i < n; i++) c[i] = MPI_Request_f2c(f[i]);
    return c;
}

static inline void ipr_freqs_back(MPI_Fint n, MPI_Request *c, MPI_Fint *f) {
    for (MPI_Fint i = 0; i < n; i++) f[i] = MPI_Request_c2f(c[i]);
    free(c);
}

static inline MPI_Status *ipr_fstatuses(MPI_Fint n, MPI_Fint *f) {
    if ((void *)f == (void *)MPI_F_STATUSES_IGNORE || IPR_F_STATUSES_IGNORED((void *)f))
        return MPI_STATUSES_IGNORE;
    MPI_Status *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    if (c == NULL) abort();
    return c;
}

static inline void ipr_fstatuses_back(MPI_Fint n, MPI_Status *c, MPI_Fint *f) {
    if (c == MPI_STATUSES_IGNORE) return;
    for (MPI_Fint i = 0; i < n; i++) MPI_Status_c2f(&c[i], f + i * IPR_F_STATUS_SIZE);
    free(c);
}
#endif
#endif
