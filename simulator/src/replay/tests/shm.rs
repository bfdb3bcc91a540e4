//! MPICH's shared-memory collectives ([`crate::collectives::shm`]) in
//! the engine: worked examples on the module's platform (transfer = L =
//! 1 ms for any size), MPICH's selector and flag 1 µs, 1 ns per byte.

use super::*;
use crate::collectives::ShmCost;

const SHM: ShmCost = ShmCost { call_s: 0.0, flag_s: 1e-6, s_per_byte: 1e-9 };

fn mpich_shm() -> Platform {
    let mut p = simple();
    p.collectives.shm = Some(SHM);
    p
}

/// Two ranks, six 8-byte all-reduces (a rank's last 1 ms later): the
/// first four are recursive doubling (one exchange, 1 ms each), from the
/// fifth MPICH's release-gather (copy in 8 ns, rank 1's flag seen after
/// 1 µs, combine 8 ns, release seen by rank 1 after 1 µs, copy out 8 ns).
#[test]
fn allreduce_turns_to_shared_memory_at_the_fifth_call() {
    let ar = || Action::Allreduce { bytes: 8, comm: 0 };
    let mut ranks: Vec<Vec<Action>> = vec![(0..6).map(|_| ar()).collect(), (0..6).map(|_| ar()).collect()];
    ranks[1].insert(5, compute(1e-3));
    let rep = run(&mpich_shm(), ranks).unwrap();
    balanced(&rep);
    // Four exchanges (4 ms); the fifth: both at 4 ms, rank 0 out at 4 ms
    // + 8 ns + 1 µs + 8 ns + 8 ns, rank 1 1 µs after it.
    let fifth0 = 4e-3 + 24e-9 + 1e-6;
    let fifth1 = fifth0 + 1e-6;
    // The sixth: rank 1 enters 1 ms later; rank 0 sees its flag 1 µs after its copy-in.
    let sixth0 = fifth1 + 1e-3 + 8e-9 + 1e-6 + 8e-9 + 8e-9;
    close(rep.ranks[0].end_s, sixth0);
    close(rep.ranks[1].end_s, sixth0 + 1e-6);
    // Rank 0 waited for rank 1's compute; what follows rank 1's entry is communication.
    close(rep.ranks[0].wait_s, 1e-3 + fifth1 - fifth0);
}

/// Without the costs, or with Open MPI's selector, the same program runs
/// point-to-point schedules only: six exchanges.
#[test]
fn without_the_model_or_under_open_mpi_nothing_changes() {
    let ranks = || vec![vec![Action::Allreduce { bytes: 8, comm: 0 }; 6], vec![Action::Allreduce { bytes: 8, comm: 0 }; 6]];
    close(run(&simple(), ranks()).unwrap().makespan_s, 6e-3);
    let mut ompi = mpich_shm();
    ompi.collectives.algs = CollAlgs::preset("ompi").unwrap();
    close(run(&ompi, ranks()).unwrap().makespan_s, 6e-3);
}

/// A communicator across two hosts keeps its point-to-point schedule
/// (MPICH's node-aware compositions are not modelled).
#[test]
fn a_communicator_across_hosts_is_not_shared_memory() {
    let mut p = mpich_shm();
    p.hosts = vec![Host::new("a", 64), Host::new("b", 64)];
    p.mapping = crate::platform::Mapping::RoundRobin;
    p.network.inter = Some(model(L, f64::INFINITY, 0.0, 0.0));
    let ranks = vec![vec![Action::Allreduce { bytes: 8, comm: 0 }; 6], vec![Action::Allreduce { bytes: 8, comm: 0 }; 6]];
    close(run(&p, ranks).unwrap().makespan_s, 6e-3);
}

/// Barriers count twice towards the threshold: the third is a
/// release-gather one. Three ranks: the first two are dissemination
/// barriers (two 1 ms rounds each); in the third, rank 0 sees rank 1's
/// flag after 1 µs and rank 2's 1 µs later, and releases; ranks 1 and 2
/// see the release 1 µs later and the 1-byte bcast's flag 1 µs after it.
#[test]
fn the_third_barrier_is_shared_memory() {
    let b = Action::Barrier { comm: 0 };
    let rep = run(&mpich_shm(), vec![vec![b.clone(); 3]; 3]).unwrap();
    balanced(&rep);
    close(rep.ranks[0].end_s, 4e-3 + 2e-6);
    close(rep.ranks[1].end_s, 4e-3 + 4e-6);
    close(rep.ranks[2].end_s, 4e-3 + 4e-6);
}
