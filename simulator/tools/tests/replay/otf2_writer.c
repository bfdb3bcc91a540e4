/* Writes a two-rank OTF2 archive the way a Score-P measurement of an MPI
 * program lays it out, with the OTF2 library's own writer API (not ours):
 * a user region "main" around the MPI calls, MPI_Send/MPI_Recv with their
 * events, an MPI_Allreduce with collective begin/end, a measurement on/off
 * record the replay does not model, and a microsecond timer with a global
 * offset.
 *
 * usage: otf2_writer <archive dir>   (writes <dir>/traces.otf2)
 */
#include <otf2/otf2.h>
#include <stdio.h>
#include <stdlib.h>

static OTF2_FlushType pre_flush(void *u, OTF2_FileType f, OTF2_LocationRef l, void *c, bool final) {
    (void)u; (void)f; (void)l; (void)c; (void)final;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *u, OTF2_FileType f, OTF2_LocationRef l) {
    (void)u; (void)f; (void)l;
    return 0;
}
static OTF2_FlushCallbacks flush = {.otf2_pre_flush = pre_flush, .otf2_post_flush = post_flush};

#define CHECK(x) do { if ((x) != OTF2_SUCCESS) { fprintf(stderr, "%s failed\n", #x); exit(1); } } while (0)

enum { S_EMPTY, S_MAIN, S_SEND, S_RECV, S_ALLREDUCE, S_NODE, S_R0, S_R1, S_T0, S_T1, S_WORLD, S_LOCS };
enum { R_MAIN, R_SEND, R_RECV, R_ALLREDUCE };

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <archive dir>\n", argv[0]);
        return 2;
    }
    OTF2_Archive *ar = OTF2_Archive_Open(argv[1], "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                         OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!ar) return 1;
    CHECK(OTF2_Archive_SetFlushCallbacks(ar, &flush, NULL));
    CHECK(OTF2_Archive_SetSerialCollectiveCallbacks(ar));
    CHECK(OTF2_Archive_OpenEvtFiles(ar));
    const uint64_t t0 = 1000; /* µs, the global offset */
    uint64_t last = 0;
    for (uint64_t r = 0; r < 2; r++) {
        OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, r);
        CHECK(OTF2_EvtWriter_MeasurementOnOff(w, NULL, t0, OTF2_MEASUREMENT_ON));
        CHECK(OTF2_EvtWriter_Enter(w, NULL, t0, R_MAIN));
        if (r == 0) {
            /* 100 µs of compute, a 1000-byte send, 190 µs of compute */
            CHECK(OTF2_EvtWriter_Enter(w, NULL, t0 + 100, R_SEND));
            CHECK(OTF2_EvtWriter_MpiSend(w, NULL, t0 + 100, 1, 0, 5, 1000));
            CHECK(OTF2_EvtWriter_Leave(w, NULL, t0 + 110, R_SEND));
            CHECK(OTF2_EvtWriter_Enter(w, NULL, t0 + 300, R_ALLREDUCE));
        } else {
            /* 50 µs of compute, the receive, 50 µs of compute */
            CHECK(OTF2_EvtWriter_Enter(w, NULL, t0 + 50, R_RECV));
            CHECK(OTF2_EvtWriter_MpiRecv(w, NULL, t0 + 150, 0, 0, 5, 1000));
            CHECK(OTF2_EvtWriter_Leave(w, NULL, t0 + 150, R_RECV));
            CHECK(OTF2_EvtWriter_Enter(w, NULL, t0 + 200, R_ALLREDUCE));
        }
        uint64_t t = r == 0 ? t0 + 300 : t0 + 200;
        CHECK(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t));
        CHECK(OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t0 + 350, OTF2_COLLECTIVE_OP_ALLREDUCE, 0, OTF2_UNDEFINED_UINT32, 16, 16));
        CHECK(OTF2_EvtWriter_Leave(w, NULL, t0 + 350, R_ALLREDUCE));
        CHECK(OTF2_EvtWriter_Leave(w, NULL, t0 + 400, R_MAIN));
        CHECK(OTF2_EvtWriter_MeasurementOnOff(w, NULL, t0 + 400, OTF2_MEASUREMENT_OFF));
        last = t0 + 400;
        CHECK(OTF2_Archive_CloseEvtWriter(ar, w));
    }
    CHECK(OTF2_Archive_CloseEvtFiles(ar));
    CHECK(OTF2_Archive_OpenDefFiles(ar));
    for (uint64_t r = 0; r < 2; r++) {
        OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(ar, r);
        CHECK(OTF2_Archive_CloseDefWriter(ar, d));
    }
    CHECK(OTF2_Archive_CloseDefFiles(ar));
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
    CHECK(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000, t0, last - t0 + 1, OTF2_UNDEFINED_TIMESTAMP));
    const char *strings[] = {"", "main", "MPI_Send", "MPI_Recv", "MPI_Allreduce", "node", "MPI Rank 0", "MPI Rank 1",
                             "Master thread 0", "Master thread 1", "MPI_COMM_WORLD", "world locations"};
    for (uint32_t i = 0; i < sizeof strings / sizeof *strings; i++) CHECK(OTF2_GlobalDefWriter_WriteString(g, i, strings[i]));
    CHECK(OTF2_GlobalDefWriter_WriteRegion(g, R_MAIN, S_MAIN, S_MAIN, S_EMPTY, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_COMPILER,
                                           OTF2_REGION_FLAG_NONE, S_EMPTY, 0, 0));
    CHECK(OTF2_GlobalDefWriter_WriteRegion(g, R_SEND, S_SEND, S_SEND, S_EMPTY, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                           OTF2_REGION_FLAG_NONE, S_EMPTY, 0, 0));
    CHECK(OTF2_GlobalDefWriter_WriteRegion(g, R_RECV, S_RECV, S_RECV, S_EMPTY, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                           OTF2_REGION_FLAG_NONE, S_EMPTY, 0, 0));
    CHECK(OTF2_GlobalDefWriter_WriteRegion(g, R_ALLREDUCE, S_ALLREDUCE, S_ALLREDUCE, S_EMPTY, OTF2_REGION_ROLE_COLL_ALL2ALL,
                                           OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, S_EMPTY, 0, 0));
    CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, S_NODE, S_NODE, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
    for (uint32_t r = 0; r < 2; r++) {
        CHECK(OTF2_GlobalDefWriter_WriteLocationGroup(g, r, S_R0 + r, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0, OTF2_UNDEFINED_LOCATION_GROUP));
        CHECK(OTF2_GlobalDefWriter_WriteLocation(g, r, S_T0 + r, OTF2_LOCATION_TYPE_CPU_THREAD, 11, r));
    }
    uint64_t locs[] = {0, 1}, ranks[] = {0, 1};
    CHECK(OTF2_GlobalDefWriter_WriteGroup(g, 0, S_LOCS, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, locs));
    CHECK(OTF2_GlobalDefWriter_WriteGroup(g, 1, S_WORLD, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, ranks));
    CHECK(OTF2_GlobalDefWriter_WriteComm(g, 0, S_WORLD, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
    CHECK(OTF2_Archive_Close(ar));
    return 0;
}
