//! Running as one replica of a data-parallel job (`mpirun -np N specc run`).
//!
//! Owns: deciding whether this process is a replica ([`Launch`]: the
//! `--distributed` flag, or the variables an MPI launcher sets), starting
//! MPI, the [`Collective`] over MPI's world communicator (the `mpi` cargo
//! feature: OpenMPI through rsmpi), and what a run asks of the job: that
//! every replica runs the same spec, settings and data
//! ([`Replicas::check_same`]) and ends with the same model
//! ([`Replicas::check_identical`]), and that none waits forever in an
//! exchange ([`Replicas::watch_exchanges`]). Without the feature, a launch
//! under MPI is an error rather than N processes each training alone.
//!
//! Invariants: MPI is initialized once and finalized when [`Replicas`] is
//! dropped, after everything that uses the communicator; a replica that
//! fails calls [`Replicas::abort`], which ends every replica of the job
//! (`MPI_Abort`), so none waits forever in a collective.

use std::rc::Rc;

use clap::ValueEnum;
use specc_runtime::session::Session;
use specc_runtime::train::replicas::{self, Collective};
use specc_runtime::train::Trainer;

use super::Error;

/// `specc run --distributed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Launch {
    /// A replica when an MPI launcher started the process
    /// (`OMPI_COMM_WORLD_SIZE`, `PMI_SIZE` or `PMIX_RANK` is set).
    Auto,
    /// Always MPI (a job of one process trains alone, through the replicated step).
    Mpi,
    /// Never: one process, even under mpirun.
    None,
}

impl Launch {
    /// Whether this process runs as an MPI replica.
    fn under_mpi(self) -> bool {
        match self {
            Launch::Mpi => true,
            Launch::None => false,
            Launch::Auto => ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
                .iter()
                .any(|v| std::env::var_os(v).is_some()),
        }
    }
}

/// This process's place in a data-parallel job.
pub struct Replicas {
    comm: Rc<dyn Collective>,
    rank: usize,
    size: usize,
    #[cfg(feature = "mpi")]
    mpi: Rc<mpi_world::World>,
}

impl Replicas {
    /// Starts MPI when `launch` says this process is a replica.
    pub fn start(launch: Launch) -> Result<Option<Replicas>, String> {
        if !launch.under_mpi() {
            return Ok(None);
        }
        Self::start_mpi().map(Some)
    }

    #[cfg(feature = "mpi")]
    fn start_mpi() -> Result<Replicas, String> {
        let world = Rc::new(mpi_world::World::init()?);
        Ok(Replicas {
            rank: world.rank(),
            size: world.replicas(),
            comm: world.clone(),
            mpi: world,
        })
    }

    #[cfg(not(feature = "mpi"))]
    fn start_mpi() -> Result<Replicas, String> {
        Err(
            "this specc was built without MPI, but runs under an MPI launcher (or with \
             --distributed mpi): build it with `cargo build --release --features mpi` \
             (needs OpenMPI: apt-get install openmpi-bin libopenmpi-dev libclang-dev), \
             or pass --distributed none to train each process alone"
                .into(),
        )
    }

    /// This replica's rank (0: the leader).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The replicas in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether this replica writes (checkpoints, summaries, output).
    pub fn is_leader(&self) -> bool {
        self.rank == 0
    }

    /// The collectives over the job's replicas.
    pub fn collective(&self) -> Rc<dyn Collective> {
        self.comm.clone()
    }

    /// How many nodes (machines) the replicas run on: the groups of
    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`, the ranks that can share
    /// memory.
    pub fn nodes(&self) -> usize {
        #[cfg(feature = "mpi")]
        let nodes = self.mpi.nodes();
        #[cfg(not(feature = "mpi"))]
        let nodes = 1;
        nodes
    }

    /// Whether the replicas exchange through shared memory rather than an
    /// allreduce: more than one, all on this node (MPI_COMM_TYPE_SHARED),
    /// unless `SPECC_SHARED_EXCHANGE=0`.
    pub fn shared_exchange(&self) -> bool {
        #[cfg(feature = "mpi")]
        let one_node = self.mpi.one_node();
        #[cfg(not(feature = "mpi"))]
        let one_node = false;
        self.size > 1 && one_node && specc_runtime::settings::shared_exchange()
    }

    /// Whether every replica runs the same `what` (the spec, the settings,
    /// the data: else they would compute different steps, or wait for each
    /// other forever); an error naming the replicas that differ.
    pub fn check_same(&self, what: &str) -> Result<(), Error> {
        let hash = replicas::hash_bytes(what.as_bytes());
        replicas::check_same(&*self.collective(), hash).map_err(|differ| {
            Error::Replicas(format!(
                "replica{} {differ:?} run{} another spec, configuration or data than \
                 replica 0: every replica must be started with the same command",
                if differ.len() == 1 { "" } else { "s" },
                if differ.len() == 1 { "s" } else { "" },
            ))
        })
    }

    /// Whether every replica holds the same model as replica 0, bit for bit
    /// (after training); an error naming those that do not.
    pub fn check_identical(&self, session: &Session) -> Result<(), Error> {
        replicas::check_identical(session, &*self.collective()).map_err(|differ| {
            Error::Replicas(format!(
                "after training, replica{} {differ:?} hold{} a model that differs from \
                 replica 0's",
                if differ.len() == 1 { "" } else { "s" },
                if differ.len() == 1 { "s" } else { "" },
            ))
        })
    }

    /// Ends the process when one step's exchange waits longer than
    /// `timeout_s` seconds for the other replicas (0: wait forever): MPI's
    /// collectives have no timeout, and a replica that hangs without dying
    /// would keep the others waiting forever.
    pub fn watch_exchanges(&self, trainer: &mut Trainer, timeout_s: f64) {
        if timeout_s <= 0.0 {
            return;
        }
        let (rank, size) = (self.rank(), self.size());
        trainer.watch_exchanges(
            std::time::Duration::from_secs_f64(timeout_s),
            Box::new(move |m| {
                eprintln!("error: replica {rank} of {size}: {m}");
                eprintln!("specc: replica {rank} of {size} gives up: stopping the job");
                // Without atexit handlers (MPI's may wait for the others);
                // mpirun ends the job when a rank exits unfinalized.
                #[cfg(unix)]
                // SAFETY: ends the process at once; nothing runs after it.
                unsafe {
                    libc::_exit(1)
                };
                #[cfg(not(unix))]
                std::process::exit(1)
            }),
        );
    }

    /// Ends every replica of the job with `code` after this one failed.
    pub fn abort(&self, code: i32) -> ! {
        #[cfg(feature = "mpi")]
        self.mpi.abort(code);
        #[cfg(not(feature = "mpi"))]
        std::process::exit(code)
    }
}

#[cfg(feature = "mpi")]
mod mpi_world {
    //! The MPI world communicator as a [`Collective`].

    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    use mpi::collective::SystemOperation;
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::environment::Universe;
    use mpi::ffi;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;
    use specc_runtime::train::replicas::Collective;

    /// Open MPI's `MPI_IN_PLACE` (`#define MPI_IN_PLACE ((void *) 1)` in its
    /// mpi.h): rsmpi has no in-place allreduce and its bindings export no
    /// `MPI_IN_PLACE`, so the in-place form is used only under Open MPI.
    const OPEN_MPI_IN_PLACE: usize = 1;

    pub struct World {
        world: SimpleCommunicator,
        /// The library is Open MPI (`MPI_Get_library_version`).
        open_mpi: bool,
        /// Every rank runs on this node (`MPI_COMM_TYPE_SHARED`).
        one_node: bool,
        /// How many nodes the ranks run on (the `MPI_COMM_TYPE_SHARED` groups).
        nodes: usize,
        /// The shared-memory windows of `shared_segments`, freed (before
        /// MPI finalizes) when the world is dropped.
        windows: Mutex<Vec<Window>>,
        /// `SPECC_FAULT_PANIC`'s drill: the all-to-all at which this rank
        /// panics, and the all-to-alls so far.
        drill: Option<u64>,
        exchanges: AtomicU64,
        // Last: finalizes MPI when dropped, after the communicator.
        _universe: Universe,
    }

    /// An `MPI_Win_allocate_shared` window over the world, in a passive
    /// target epoch (`MPI_Win_lock_all`) for its whole life.
    struct Window(ffi::MPI_Win);

    // SAFETY: an MPI handle, not memory of this process: the world's
    // collectives (which use it) may be called from any one thread at a time.
    unsafe impl Send for Window {}

    impl Drop for Window {
        fn drop(&mut self) {
            // SAFETY: a window allocated and locked by `shared_segments`;
            // every rank frees it (the world is dropped on every rank).
            unsafe {
                ffi::MPI_Win_unlock_all(self.0);
                ffi::MPI_Win_free(&mut self.0);
            }
        }
    }

    impl World {
        pub fn init() -> Result<World, String> {
            let universe = mpi::initialize().ok_or(
                "MPI was already initialized in this process (or cannot be): \
                 specc starts it once per run",
            )?;
            let open_mpi =
                mpi::environment::library_version().is_ok_and(|v| v.contains("Open MPI"));
            let world = universe.world();
            // A replica that panics (a bug) would finalize MPI as it
            // unwinds, which waits for the replicas that wait for it in an
            // exchange: the job would hang. It ends the job instead.
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                previous(info);
                SimpleCommunicator::world().abort(101);
            }));
            let node = world.split_shared(world.rank());
            let one_node = node.size() == world.size();
            // The nodes: the ranks that are first on theirs, counted.
            let first = u32::from(node.rank() == 0);
            let mut nodes = 0u32;
            world.all_reduce_into(&first, &mut nodes, SystemOperation::sum());
            let drill = specc_runtime::settings::fault_panic()?
                .filter(|&(rank, _)| rank == world.rank() as usize)
                .map(|(_, n)| n);
            Ok(World {
                drill,
                exchanges: AtomicU64::new(0),
                world,
                open_mpi,
                one_node,
                nodes: nodes as usize,
                windows: Mutex::new(Vec::new()),
                _universe: universe,
            })
        }

        pub fn one_node(&self) -> bool {
            self.one_node
        }

        pub fn nodes(&self) -> usize {
            self.nodes
        }

        pub fn abort(&self, code: i32) -> ! {
            self.world.abort(code)
        }
    }

    impl Collective for World {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        fn replicas(&self) -> usize {
            self.world.size() as usize
        }
        fn all_reduce_sum(&self, send: &[f32], recv: &mut [f32]) {
            self.world
                .all_reduce_into(send, &mut recv[..send.len()], SystemOperation::sum());
        }
        fn all_reduce_sum_in_place(&self, values: &mut [f32]) -> bool {
            let Ok(count) = i32::try_from(values.len()) else {
                return false;
            };
            if !self.open_mpi {
                return false;
            }
            // SAFETY: `values` holds `count` floats; with Open MPI's in-place
            // sentinel as the send buffer, MPI_Allreduce reads and writes
            // `values` only. The default error handler aborts the job on failure.
            unsafe {
                mpi::ffi::MPI_Allreduce(
                    OPEN_MPI_IN_PLACE as *const std::os::raw::c_void,
                    values.as_mut_ptr().cast(),
                    count,
                    mpi::ffi::RSMPI_FLOAT,
                    mpi::ffi::RSMPI_SUM,
                    self.world.as_raw(),
                );
            }
            true
        }
        fn all_gather(&self, send: &[u32], recv: &mut [u32], counts: &[i32], displs: &[i32]) {
            let mut into = PartitionMut::new(recv, counts, displs);
            self.world.all_gather_varcount_into(send, &mut into);
        }
        fn all_gather_f64(&self, send: &[f64], recv: &mut [f64]) {
            self.world
                .all_gather_into(send, &mut recv[..send.len() * self.replicas()]);
        }
        fn broadcast(&self, values: &mut [u32]) {
            self.world.process_at_rank(0).broadcast_into(values);
        }
        fn all_to_all(
            &self,
            send: &[u32],
            send_counts: &[i32],
            send_displs: &[i32],
            recv: &mut [u32],
            recv_counts: &[i32],
            recv_displs: &[i32],
        ) {
            let at = self.exchanges.fetch_add(1, Ordering::Relaxed) + 1;
            if self.drill == Some(at) {
                panic!(
                    "SPECC_FAULT_PANIC: replica {} panics at its all-to-all {at} (a failure drill)",
                    self.world.rank()
                );
            }
            let from = Partition::new(send, send_counts, send_displs);
            let mut into = PartitionMut::new(recv, recv_counts, recv_displs);
            self.world.all_to_all_varcount_into(&from, &mut into);
        }
        fn shared_segments(&self, bytes: usize) -> Option<Vec<*mut u8>> {
            // 64 bytes more, to align each segment (the window's aren't).
            let size = ffi::MPI_Aint::try_from(bytes.checked_add(64)?).ok()?;
            if !self.one_node {
                return None;
            }
            let mut base: *mut u8 = std::ptr::null_mut();
            let mut win = std::mem::MaybeUninit::<ffi::MPI_Win>::uninit();
            // SAFETY: MPI allocates `bytes` bytes for this rank in a window
            // shared by the world's ranks (all on this node), writing its
            // address to `base` and the window to `win`; the default error
            // handler aborts the job on failure. Every rank calls this.
            let win = unsafe {
                ffi::MPI_Win_allocate_shared(
                    size,
                    1,
                    ffi::RSMPI_INFO_NULL,
                    self.world.as_raw(),
                    (&mut base as *mut *mut u8).cast(),
                    win.as_mut_ptr(),
                );
                let win = Window(win.assume_init());
                ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as i32, win.0);
                win
            };
            let mut segments = Vec::with_capacity(self.replicas());
            for r in 0..self.world.size() {
                let (mut len, mut unit, mut ptr) = (0, 0, std::ptr::null_mut::<u8>());
                // SAFETY: rank `r`'s segment of the window: its length and
                // address in this process.
                unsafe {
                    ffi::MPI_Win_shared_query(
                        win.0,
                        r,
                        &mut len,
                        &mut unit,
                        (&mut ptr as *mut *mut u8).cast(),
                    );
                }
                if len < size || ptr.is_null() {
                    return None;
                }
                segments.push(ptr.wrapping_add(ptr.align_offset(64)));
            }
            if let Ok(mut w) = self.windows.lock() {
                w.push(win);
            }
            Some(segments)
        }
        fn barrier(&self) {
            // The unified memory model: a memory barrier on each side of
            // the ranks' synchronization (MPI_Win_sync, MPI_Barrier).
            let Ok(windows) = self.windows.lock() else {
                return;
            };
            // SAFETY: windows in a passive target epoch; the barrier is
            // called by every rank.
            unsafe {
                for w in windows.iter() {
                    ffi::MPI_Win_sync(w.0);
                }
                ffi::MPI_Barrier(self.world.as_raw());
                for w in windows.iter() {
                    ffi::MPI_Win_sync(w.0);
                }
            }
        }
    }
}
