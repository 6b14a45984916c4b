//! The engine's integration tests.

mod gate_fuzz;
