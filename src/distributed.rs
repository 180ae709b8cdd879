//! Running as one replica of a data-parallel job (`mpirun -np N specc run`).
//!
//! Owns: deciding whether this process is a replica ([`Launch`]: the
//! `--distributed` flag, or the variables an MPI launcher sets), starting
//! MPI, and the [`Collective`] over MPI's world communicator (the `mpi`
//! cargo feature: OpenMPI through rsmpi). Without the feature, a launch
//! under MPI is an error rather than N processes each training alone.
//!
//! Invariants: MPI is initialized once and finalized when [`Replicas`] is
//! dropped, after everything that uses the communicator; a replica that
//! fails calls [`Replicas::abort`], which ends every replica of the job
//! (`MPI_Abort`), so none waits forever in a collective.

use std::rc::Rc;

use clap::ValueEnum;
use specc_runtime::train::replicas::Collective;

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

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether this replica writes (checkpoints, summaries, output).
    pub fn is_leader(&self) -> bool {
        self.rank == 0
    }

    pub fn collective(&self) -> Rc<dyn Collective> {
        self.comm.clone()
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

    use mpi::collective::SystemOperation;
    use mpi::datatype::PartitionMut;
    use mpi::environment::Universe;
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
        // Last: finalizes MPI when dropped, after the communicator.
        _universe: Universe,
    }

    impl World {
        pub fn init() -> Result<World, String> {
            let universe = mpi::initialize().ok_or(
                "MPI was already initialized in this process (or cannot be): \
                 specc starts it once per run",
            )?;
            let open_mpi =
                mpi::environment::library_version().is_ok_and(|v| v.contains("Open MPI"));
            Ok(World {
                world: universe.world(),
                open_mpi,
                _universe: universe,
            })
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
        fn broadcast(&self, values: &mut [u32]) {
            self.world.process_at_rank(0).broadcast_into(values);
        }
    }
}
