//! No code: see this crate's manifest. It exists so that the shared dependencies of the main
//! job and the command line are built with one feature set, hence once.
