/*
 * MPI_Init, MPI_Init_thread and MPI_Finalize: the interposer's lifecycle.
 * The other wrappers are generated from mpi.tbl by build.rs.
 */
#include "support.h"

static void started(void) {
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

int MPI_Finalize(void) {
    if (ipr_begin(3 /* Op::Finalize */, IPR_CALLER)) ipr_finalize();
    return PMPI_Finalize();
}
