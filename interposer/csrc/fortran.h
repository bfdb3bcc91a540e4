/*
 * Helpers of the generated Fortran bindings (OpenMPI only: its Fortran
 * library calls PMPI_X directly, so the C wrappers would miss Fortran
 * programs; MPICH's calls the C MPI_X, which the C wrappers record).
 *
 * Fortran passes handles as MPI_Fint and marks MPI_IN_PLACE, MPI_BOTTOM
 * and MPI_STATUS(ES)_IGNORE by the addresses of common blocks, which
 * OpenMPI names mpi_fortran_<x>_ (and three other spellings). They are
 * declared weak: absent (a C program), their address is null.
 */
#ifndef IPR_FORTRAN_H
#define IPR_FORTRAN_H
#ifdef OPEN_MPI
#include "support.h"

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

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be an int for the Fortran bindings");
/* Fortran MPI_STATUS_SIZE: OpenMPI's C status, in MPI_Fint units (6 in 4.1). */
#define IPR_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

static inline void *ipr_fbuf(void *p) {
    if (IPR_IS(p, mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)) return MPI_IN_PLACE;
    if (IPR_IS(p, mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)) return MPI_BOTTOM;
    return p;
}

static inline int ipr_fstatus_ignored(MPI_Fint *s) {
    return (void *)s == (void *)MPI_F_STATUS_IGNORE || IPR_IS((void *)s, mpi_fortran_status_ignore, MPI_FORTRAN_STATUS_IGNORE);
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
    if ((void *)f == (void *)MPI_F_STATUSES_IGNORE || IPR_IS((void *)f, mpi_fortran_statuses_ignore, MPI_FORTRAN_STATUSES_IGNORE))
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
