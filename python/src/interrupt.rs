//! A fit Ctrl-C can stop: DP-SGD's trainer asking a hook before each step, as the
//! `Trainer` that dp-fit's `fit_classes` takes (the hook is `py_common::interruptible`'s).

use dp_erm::{DpSgd, ErmError, Examples, SgdModel, Trainer};
use dp_noise::ReleaseRng;

/// `sgd`, trained by `DpSgd::fit_interruptible` with `interrupted`: the same model as
/// `sgd`'s own `train` when the hook never answers true, `ErmError::Interrupted` (no model)
/// when it does.
pub(crate) struct StoppableSgd<'a> {
    /// The trainer.
    pub sgd: &'a DpSgd,
    /// Asked before each step whether to stop.
    pub interrupted: &'a dyn Fn() -> bool,
}

impl Trainer for StoppableSgd<'_> {
    type Model = SgdModel;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        Trainer::epsilon(self.sgd)
    }

    fn delta(&self) -> f64 {
        Trainer::delta(self.sgd)
    }

    fn rdp_curve(&self, orders: &[f64]) -> Option<dp_noise::RdpCurve> {
        Trainer::rdp_curve(self.sgd, orders)
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<SgdModel, ErmError> {
        self.sgd.check_shape(data.len(), data.features())?;
        self.sgd.fit_interruptible(data, rng, self.interrupted)
    }

    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        self.sgd.check_shape(rows, features)
    }
}
