/*
 * MPI_Init, MPI_Init_thread and MPI_Finalize: the interposer's lifecycle.
 * The other wrappers are generated from mpi.tbl by build.rs.
 */
#include "online.h"

extern int ipr_span_barrier(void);
extern void ipr_span_start(void);
extern void ipr_span_end(int rank);

/* The start of MPI_Finalize: time mode's barrier, then the span's end
 * (interposer/src/span.rs). */
static void span_end(void) {
    int rank = 0;
    if (ipr_span_barrier()) PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ipr_span_end(rank);
}

static void started(void) {
    static int done = 0;
    if (done++) return; /* a Fortran MPI_Init may reach the C one too */
    int rank = 0, size = 0, len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Get_library_version(lib, &len);
    ipr_init(rank, size, lib);
    /* Empty blocks through a real wrapper measure the recorder's own share
     * of each compute block (not recorded, subtracted from every block). */
    if (ipr_calibration(1)) {
        for (int i = 0, n = ipr_calibration_calls(); i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        ipr_calibration(0);
    }
    ipr_online_start();
    if (ipr_span_barrier()) PMPI_Barrier(MPI_COMM_WORLD);
    ipr_span_start();
    /* The application's first compute block starts here, after our own
     * work (the shadow communicators are collectives). */
    ipr_started();
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) started();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) started();
    return rc;
}

/* The interposer's part of MPI_Finalize, once: MPICH's Fortran
 * MPI_FINALIZE, wrapped below, reaches the C MPI_Finalize too. */
static void finalizing(const void *caller) {
    static int done = 0;
    if (done++) return;
    span_end();
    struct ipr_params local, *p;
    if (ipr_begin(IPR_OP_MPI_Finalize, caller, &local, &p)) {
        ipr_online_finalize();
        ipr_finalize();
        ipr_online_ghosts();
    }
}

int MPI_Finalize(void) {
    finalizing(IPR_CALLER);
    return PMPI_Finalize();
}

/* Fortran: Open MPI's bindings call PMPI_Init directly, so wrap them, call
 * the next definition (the MPI's own Fortran initialization), then start.
 * MPICH's call the C MPI_Init (started() runs once) and MPI_Finalize
 * (finalizing() runs once, here, with the Fortran caller). */
#include <dlfcn.h>

typedef void (*ipr_fn1)(MPI_Fint *);
typedef void (*ipr_fn3)(MPI_Fint *, MPI_Fint *, MPI_Fint *);

#define IPR_FORTRAN_INIT(sym)                                            \
    void sym(MPI_Fint *ierr) {                                           \
        static ipr_fn1 next;                                             \
        if (next == NULL) next = (ipr_fn1)dlsym(RTLD_NEXT, #sym);        \
        if (next != NULL) next(ierr);                                    \
        else *ierr = PMPI_Init(NULL, NULL);                              \
        if (*ierr == MPI_SUCCESS) started();                             \
    }
#define IPR_FORTRAN_INIT_THREAD(sym)                                     \
    void sym(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {   \
        static ipr_fn3 next;                                             \
        if (next == NULL) next = (ipr_fn3)dlsym(RTLD_NEXT, #sym);        \
        if (next != NULL) next(required, provided, ierr);                \
        else *ierr = PMPI_Init_thread(NULL, NULL, *required, provided);  \
        if (*ierr == MPI_SUCCESS) started();                             \
    }
#define IPR_FORTRAN_FINALIZE(sym)                                        \
    void sym(MPI_Fint *ierr) {                                           \
        static ipr_fn1 next;                                             \
        if (next == NULL) next = (ipr_fn1)dlsym(RTLD_NEXT, #sym);        \
        finalizing(IPR_CALLER);                                          \
        if (next != NULL) next(ierr);                                    \
        else *ierr = PMPI_Finalize();                                    \
    }
#define IPR_SPELLINGS(m, x, X) m(x##_) m(x##__) m(x) m(X)
IPR_SPELLINGS(IPR_FORTRAN_INIT, mpi_init, MPI_INIT)
IPR_SPELLINGS(IPR_FORTRAN_INIT_THREAD, mpi_init_thread, MPI_INIT_THREAD)
IPR_SPELLINGS(IPR_FORTRAN_FINALIZE, mpi_finalize, MPI_FINALIZE)
