//! # dp-erm
//!
//! Differentially private empirical risk minimization (Chaudhuri, Monteleoni, Sarwate,
//! JMLR 2011): L2-regularized logistic regression and Huber-loss SVM, trained
//! non-privately, by output perturbation, or by objective perturbation.
//!
//! **Not yet implemented.** Planned contents: the losses with their Lipschitz and
//! curvature constants; a checked training-set type (rows of norm ≤ 1, labels ±1, finite
//! values); estimators with validated parameters that report the ε they spend; models that
//! save and load in a versioned format. Built on `dp-noise` (vector noise) and `dp-optim`
//! (certified solvers).
#![forbid(unsafe_code)]
