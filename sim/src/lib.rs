//! # mlx5-sim
//!
//! A software BlueField-3 behind the same DevX interface as the hardware: a firmware command
//! processor, the NIC datapath and a DPA that executes RISC-V code. It implements the driver's
//! `mlx5_dpa::devx::Devx` trait so that driver code runs on it unchanged.
//!
//! Not implemented yet: the firmware model is the next piece of work (issue "mlx5-sim"). Until
//! it lands, `mlx5-dpa --sim` reports that the device model is not available.
