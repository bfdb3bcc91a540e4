/*
 * One libinterposer.so for Open MPI and MPICH: which ABI's wrappers run is
 * chosen at the first MPI call, from the MPI library in the process.
 *
 * build.rs compiles the wrappers twice, once against each MPI's <mpi.h>,
 * renames every symbol a build defines to ipr_<abi>_<name> (ipr_ompi_,
 * ipr_mpich_) and makes its references to the MPI's own symbols weak, so
 * that loading into the other MPI's process binds them to nothing. Each
 * function a build defines (MPI_X, the Fortran spellings, what the Rust
 * side calls) is exported once as a trampoline, generated into
 * abi_gen.c: `jmp *ipr_slot[i]`, which forwards every register untouched,
 * whatever the function's signature.
 *
 * A slot first points to a lazy stub: the first call through any
 * trampoline chooses the ABI (ipr_abi_resolve, once) and fills every
 * slot with that ABI's function, or, when the build has none of that
 * name or the MPI is neither, with the next definition in the process
 * (dlsym RTLD_NEXT: the MPI's own), so the application runs unchanged.
 * Under INTERPOSER_MODE=off every MPI entry point takes the next
 * definition, whatever the ABI.
 *
 * Assumes x86_64 Linux (the System V calling convention of the stubs).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From abi_gen.c (build.rs). */
#define IPR_ABIS 2
extern const unsigned ipr_slots;
extern void *ipr_slot[];
extern const char *const ipr_slot_names[];
extern void *const ipr_slot_lazy[];
/* Per ABI (0 Open MPI, 1 MPICH): 1 when this library was built with it,
 * and its function of each slot's name (NULL when it has none). */
extern const int ipr_abi_built[IPR_ABIS];
extern void *const *const ipr_abi_slots[IPR_ABIS];

static const char *const abi_names[IPR_ABIS] = {"Open MPI", "MPICH"};
/* A symbol each MPI's library exports and the other's does not. */
static const char *const abi_marks[IPR_ABIS] = {"ompi_mpi_comm_world", "MPIR_Err_create_code"};

/* The chosen ABI: its index, -1 for none (no MPI, or a third one). */
static int chosen = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Where `sym` (found through the process's default scope) comes from. */
static const char *library_of(const void *sym) {
    Dl_info info;
    return sym != NULL && dladdr(sym, &info) && info.dli_fname != NULL ? info.dli_fname : "?";
}

/* INTERPOSER_MODE=off (blanks around it allowed, as the Rust side reads
 * it): the interposer stays out of the way, so the MPI entry points go
 * straight to the MPI's own functions and a call costs one indirect jump. */
static int passive(void) {
    const char *m = getenv("INTERPOSER_MODE");
    if (m == NULL) return 0;
    while (isspace((unsigned char)*m)) m++;
    size_t n = strlen(m);
    while (n > 0 && isspace((unsigned char)m[n - 1])) n--;
    return n == 3 && strncmp(m, "off", 3) == 0;
}

/* An MPI entry point (C or Fortran spelling), not one of the
 * interposer's own functions that the Rust side reaches through a slot. */
static int mpi_name(const char *name) { return strncmp(name, "MPI_", 4) == 0 || strncmp(name, "mpi_", 4) == 0; }

static void choose(void) {
    void *mpi = dlsym(RTLD_DEFAULT, "PMPI_Init");
    for (int a = 0; a < IPR_ABIS && mpi != NULL; a++) {
        if (dlsym(RTLD_DEFAULT, abi_marks[a]) == NULL) continue;
        if (ipr_abi_built[a]) {
            chosen = a;
        } else {
            fprintf(stderr,
                    "interposer: warning: this process runs %s (%s), which this libinterposer.so was built without; "
                    "MPI calls pass through unrecorded\n",
                    abi_names[a], library_of(mpi));
        }
        break;
    }
    if (mpi != NULL && chosen < 0 && dlsym(RTLD_DEFAULT, abi_marks[0]) == NULL && dlsym(RTLD_DEFAULT, abi_marks[1]) == NULL)
        fprintf(stderr,
                "interposer: warning: the MPI library of this process (%s) is neither Open MPI nor MPICH; "
                "MPI calls pass through unrecorded\n",
                library_of(mpi));
    int off = passive();
    for (unsigned i = 0; i < ipr_slots; i++) {
        void *f = off && mpi_name(ipr_slot_names[i]) ? dlsym(RTLD_NEXT, ipr_slot_names[i]) : NULL;
        if (f == NULL && chosen >= 0) f = ipr_abi_slots[chosen][i];
        if (f == NULL) f = dlsym(RTLD_NEXT, ipr_slot_names[i]);
        if (f != NULL) __atomic_store_n(&ipr_slot[i], f, __ATOMIC_RELEASE);
    }
}

/* The lazy stubs' C side: the function slot `slot` now points to. A slot
 * left without one means the application called an MPI function that no
 * library in the process defines. */
__attribute__((visibility("hidden"))) void *ipr_abi_resolve(void **slot) {
    pthread_once(&once, choose);
    unsigned i = (unsigned)(slot - ipr_slot);
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (i < ipr_slots && f == ipr_slot_lazy[i]) {
        fprintf(stderr, "interposer: error: %s called, but no library in this process defines it\n", ipr_slot_names[i]);
        abort();
    }
    return f;
}

/* The lazy stubs (abi_gen.c) jump here with their slot's address in %r11:
 * save the argument registers (and %rax, the vector-register count of a
 * variadic call), resolve, restore, and jump to the slot's function. */
__asm__(".text\n"
        ".globl ipr_lazy\n"
        ".hidden ipr_lazy\n"
        ".type ipr_lazy,@function\n"
        "ipr_lazy:\n"
        "    push %rdi\n"
        "    push %rsi\n"
        "    push %rdx\n"
        "    push %rcx\n"
        "    push %r8\n"
        "    push %r9\n"
        "    push %rax\n"
        "    push %r11\n"
        "    sub $136, %rsp\n"
        "    movdqu %xmm0, 0(%rsp)\n"
        "    movdqu %xmm1, 16(%rsp)\n"
        "    movdqu %xmm2, 32(%rsp)\n"
        "    movdqu %xmm3, 48(%rsp)\n"
        "    movdqu %xmm4, 64(%rsp)\n"
        "    movdqu %xmm5, 80(%rsp)\n"
        "    movdqu %xmm6, 96(%rsp)\n"
        "    movdqu %xmm7, 112(%rsp)\n"
        "    mov %r11, %rdi\n"
        "    call ipr_abi_resolve\n"
        "    mov %rax, 136(%rsp)\n"
        "    movdqu 0(%rsp), %xmm0\n"
        "    movdqu 16(%rsp), %xmm1\n"
        "    movdqu 32(%rsp), %xmm2\n"
        "    movdqu 48(%rsp), %xmm3\n"
        "    movdqu 64(%rsp), %xmm4\n"
        "    movdqu 80(%rsp), %xmm5\n"
        "    movdqu 96(%rsp), %xmm6\n"
        "    movdqu 112(%rsp), %xmm7\n"
        "    add $136, %rsp\n"
        "    pop %r11\n"
        "    pop %rax\n"
        "    pop %r9\n"
        "    pop %r8\n"
        "    pop %rcx\n"
        "    pop %rdx\n"
        "    pop %rsi\n"
        "    pop %rdi\n"
        "    jmp *%r11\n"
        ".size ipr_lazy, .-ipr_lazy\n");
