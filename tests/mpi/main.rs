//! The data-parallel tests (`cargo test --features mpi --test mpi`): real
//! `mpirun` jobs of the `specc` binary, on this machine (`mpi`) and on
//! simulated hosts (`mpi_hosts`). Without the `mpi` feature the binary has
//! no tests.

mod mpi;
mod mpi_hosts;
#[cfg(feature = "mpi")]
mod mpi_jobs;
mod mpi_sharded;
