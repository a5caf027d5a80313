//! DP-SGD / DP-GD for logistic regression, the Huber SVM and Huber regression
//! ([`DpSgd::fit_regression`]): Poisson-subsampled batches,
//! per-example clipping, Gaussian noise on the batch sum, accounted with the privacy-loss
//! distribution of the subsampled Gaussian (dp-noise's
//! [`dp_noise::PrivacyLossDistribution`], the default) or its RDP (dp-noise's
//! [`RdpCurve`]), as the configuration's [`Accountant`] says.

use dp_noise::{
    GaussianVector, Neighbouring, RdpCurve, ReleaseRng, default_orders, smallest_noise_multiplier,
};
use dp_optim::MarginLoss;

use crate::calibration::release_grid;
use crate::estimator::Task;
use crate::estimator::snap_to_grid;
use crate::gaussian::check_delta;
use crate::mechanism::Mechanism;
use crate::model::{LinearModel, ModelMetadata};
use crate::sgd_accounting::{
    Accountant, EPSILON_BITS, pld_calibration, pld_discretization, pld_epsilon, round_up_to_bits,
};
use crate::{
    Classifier, ErmError, Examples, Features, Loss, MAX_EPSILON, RegressionModel, RegressionSet,
    Trainer,
};

/// Largest number of steps T a fit may take.
pub const MAX_SGD_STEPS: u64 = 1_000_000;

/// The neighbouring datasets a DP-SGD guarantee is stated for, with what the step divides
/// the noisy sum by under each.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SgdNeighbours {
    /// One example replaced, n the same (the workspace's relation): n is public, so the step
    /// divides by `qn` with the data's n.
    #[default]
    ReplaceOne,
    /// One example added or removed (the relation of MTZ19 and of Opacus' accountant): the
    /// number of rows is itself private, so the step divides by this public expected batch
    /// size (q·n̂ for a public estimate n̂), never by anything read from the data.
    AddRemove {
        /// The public expected batch size the noisy sum is divided by (finite, > 0).
        expected_batch: f64,
    },
}

impl SgdNeighbours {
    /// dp-noise's name of the relation, which picks the RDP curve.
    pub fn relation(&self) -> Neighbouring {
        match self {
            SgdNeighbours::ReplaceOne => Neighbouring::ReplaceOne,
            SgdNeighbours::AddRemove { .. } => Neighbouring::AddRemove,
        }
    }
}

/// The hyperparameters of a DP-SGD fit; every one is public (fixed before the data are
/// seen). `q = 1` is full-batch DP-GD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgdConfig {
    /// The loss.
    pub loss: Loss,
    /// Λ ≥ 0 of the L2 term `(Λ/2)‖w‖²`, whose gradient `Λw` is added outside the noisy sum
    /// (it depends on the iterate only, not on the data).
    pub regularization: f64,
    /// The Poisson sampling rate q in (0, 1]: each example joins each batch independently
    /// with this probability (expected batch size `qn`).
    pub sampling_rate: f64,
    /// The number of steps T (1 ≤ T ≤ [`MAX_SGD_STEPS`]).
    pub steps: u64,
    /// The clipping norm C > 0 of one example's gradient.
    pub clip_norm: f64,
    /// The learning rate η > 0.
    pub learning_rate: f64,
    /// Release the average of the iterates `w_1 … w_T` instead of the last one.
    pub average_iterates: bool,
    /// The δ the (ε, δ) guarantee is stated at (0 < δ < 1).
    pub delta: f64,
    /// The neighbouring relation of the guarantee (replace-one unless set).
    pub neighbours: SgdNeighbours,
    /// The accountant that calibrates σ and certifies ε (privacy-loss distributions unless
    /// set).
    pub accountant: Accountant,
}

impl DpSgdConfig {
    /// Logistic or Huber DP-SGD with C = 1, Λ = 0, the last iterate, at δ.
    pub fn new(loss: Loss, sampling_rate: f64, steps: u64, learning_rate: f64, delta: f64) -> Self {
        Self {
            loss,
            regularization: 0.0,
            sampling_rate,
            steps,
            clip_norm: 1.0,
            learning_rate,
            average_iterates: false,
            delta,
            neighbours: SgdNeighbours::ReplaceOne,
            accountant: Accountant::Pld,
        }
    }

    /// The same configuration certified by `accountant`.
    pub fn with_accountant(mut self, accountant: Accountant) -> Self {
        self.accountant = accountant;
        self
    }

    /// The same configuration for add/remove neighbours: the noisy sum divided by the
    /// public `expected_batch` (for a schedule on a public estimate n̂ of the rows, its
    /// batch size). Checked with the rest when a [`DpSgd`] is built.
    pub fn add_remove(mut self, expected_batch: f64) -> Self {
        self.neighbours = SgdNeighbours::AddRemove { expected_batch };
        self
    }

    /// Logistic or Huber DP-SGD (C = 1, Λ = 0, the last iterate) in the terms a user gives: an
    /// expected batch b of n public rows and a number of passes, so q = b/n and
    /// T = ⌈epochs·n/b⌉. Refused, naming `batch_size` or `epochs`, unless 1 ≤ b ≤ n and
    /// epochs are finite, > 0 and give at most [`MAX_SGD_STEPS`] steps; n = 0 is
    /// [`ErmError::EmptyData`]. The one place the library turns a schedule into (q, T).
    pub fn scheduled(
        loss: Loss,
        rows: usize,
        batch_size: usize,
        epochs: f64,
        learning_rate: f64,
        delta: f64,
    ) -> Result<Self, ErmError> {
        if rows == 0 {
            return Err(ErmError::EmptyData);
        }
        if !(1..=rows).contains(&batch_size) {
            return Err(ErmError::BatchSizeOutOfRange { batch_size, rows });
        }
        if !(epochs.is_finite() && epochs > 0.0) {
            return Err(ErmError::InvalidParameter {
                what: "epochs",
                value: epochs,
                requirement: "finite and > 0",
            });
        }
        let steps = (epochs * rows as f64 / batch_size as f64).ceil();
        if !(1.0..=MAX_SGD_STEPS as f64).contains(&steps) {
            return Err(ErmError::InvalidParameter {
                what: "epochs",
                value: epochs,
                requirement: "such that the steps ⌈epochs·n/batch_size⌉ are at most 1000000",
            });
        }
        let sampling_rate = batch_size as f64 / rows as f64;
        Ok(Self::new(
            loss,
            sampling_rate,
            steps as u64,
            learning_rate,
            delta,
        ))
    }

    /// Every parameter checked, naming the first bad one.
    fn check(&self) -> Result<(), ErmError> {
        self.loss.check()?;
        let invalid = |what, value, requirement| ErmError::InvalidParameter {
            what,
            value,
            requirement,
        };
        let q = self.sampling_rate;
        if !(q.is_finite() && q > 0.0 && q <= 1.0) {
            return Err(invalid("sampling_rate", q, "in (0, 1]"));
        }
        if !(1..=MAX_SGD_STEPS).contains(&self.steps) {
            return Err(ErmError::InvalidCount {
                what: "steps",
                value: self.steps as usize,
                requirement: "between 1 and 1000000",
            });
        }
        let lambda = self.regularization;
        if !(lambda.is_finite() && lambda >= 0.0) {
            return Err(invalid("regularization", lambda, "finite and >= 0"));
        }
        let c = self.clip_norm;
        if !(c.is_finite() && c > 0.0) {
            return Err(invalid("clip_norm", c, "finite and > 0"));
        }
        let eta = self.learning_rate;
        if !(eta.is_finite() && eta > 0.0) {
            return Err(invalid("learning_rate", eta, "finite and > 0"));
        }
        check_delta(self.delta)?;
        if let SgdNeighbours::AddRemove { expected_batch } = self.neighbours
            && !(expected_batch.is_finite() && expected_batch > 0.0)
        {
            return Err(invalid("expected_batch", expected_batch, "finite and > 0"));
        }
        Ok(())
    }

    /// The factor on a step's noisy sum, `1/(qn)`: n the data's under replace-one (public
    /// there), the public expected batch under add/remove.
    fn sum_scale(&self, rows: usize, rate: f64) -> f64 {
        match self.neighbours {
            SgdNeighbours::ReplaceOne => 1.0 / (rate * rows as f64),
            SgdNeighbours::AddRemove { expected_batch } => 1.0 / expected_batch,
        }
    }

    /// The sampling rate the sampler realizes: q rounded up to a multiple of 2⁻⁵³ (each
    /// example joins when a uniform 53-bit integer is below `q·2⁵³`, rounded up).
    fn realized_rate(&self) -> (u64, f64) {
        let threshold = (self.sampling_rate * TWO_53).ceil() as u64;
        (threshold, threshold as f64 / TWO_53)
    }
}

const TWO_53: f64 = 9_007_199_254_740_992.0;

/// DP-SGD with a noise multiplier σ: an **(ε, δ)** trainer for replace-one neighbours, or
/// for add/remove neighbours where the configuration says so ([`SgdNeighbours`]).
///
/// Each step t = 1…T: every example joins the batch `B_t` independently with probability q;
/// each member's gradient `g_i = ℓ'(y_i wᵀx_i)·y_i x_i` is clipped to norm C
/// (`g_i·min(1, C/‖g_i‖)`); `N(0, σ²C²I)` is added to their sum; and
/// `w ← w − η·((Σ g_i + noise)/m + Λw)`, from w = 0, where m = qn (replace-one) or the
/// public expected batch (add/remove). The release is `w_T` (or the average of
/// `w_1…w_T`), snapped to a grid 2⁻³⁰ of one step's noise on w.
///
/// # Privacy
/// For the configuration's relation, the released model is (ε, δ)-DP with ε =
/// [`DpSgd::epsilon`] at δ = [`DpSgdConfig::delta`]:
///
/// - **Replace-one** (datasets of the same size n that differ in one example replaced, the
///   workspace's relation). One step releases the noisy sum of the clipped gradients of a
///   Poisson sample, whose members each contribute at most C in L2 norm: the
///   Poisson-subsampled Gaussian mechanism with noise multiplier σ. Its RDP for one example
///   added or removed is MTZ19's (dp-noise [`RdpCurve`]); a replacement is a removal and an
///   addition, bounded by Mironov's weak triangle inequality, and by the unsubsampled
///   Gaussian of sensitivity 2C, whichever is smaller at each order
///   ([`Neighbouring::ReplaceOne`]). The step's inputs (the iterate, the public n, q, η, Λ,
///   C) are functions of earlier releases and public values.
/// - **Add/remove** (datasets that differ in one example present in one and absent from the
///   other, so n differs by one and is itself private; MTZ19's and Opacus' relation). One
///   step is the Poisson-subsampled Gaussian mechanism with MTZ19's add/remove curve
///   ([`Neighbouring::AddRemove`]); the divisor m is the public expected batch, so no step
///   reads n. The loop visits every row, so the *time* of a fit follows n (timing is not
///   covered, as below). An ε here is not comparable with a replace-one ε: at the same σ
///   it is roughly half.
/// - Either way the T steps compose adaptively. The configuration's [`Accountant`] bounds
///   the ε of the composition at δ:
///   - [`Accountant::Pld`] (the default): the T-fold composition of the step's
///     privacy-loss distribution under the relation (dp-noise's
///     [`dp_noise::PrivacyLossDistribution::subsampled_gaussian`], the pairs derived there:
///     MTZ19's for add/remove, the antipodal mixtures for replace-one), discretized
///     pessimistically by connect the dots on the grid `h = 10⁻⁴·min(ε, 1)` of
///     [`crate::pld_discretization`] (ε the target, or the RDP ε of a given σ; a law too wide
///     for that grid is accounted on a 10× coarser one), every ε an upper bound with its
///     discretization and floating-point error included.
///   - [`Accountant::Rdp`]: the curve is T times one step's ([`DpSgd::rdp_curve`]),
///     converted to ε at δ by Balle et al. 2020 over dp-noise's [`default_orders`]
///     (integer orders 2…8192), rounded up.
///
///   Both bound the same mechanism; PLD's bound is tighter (σ 8–10% lower at the same
///   target). The RDP curve is computed either way, for [`DpSgd::rdp_curve`].
/// - The regularizer's gradient Λw is a function of the iterate only; the step divides by
///   the public m; averaging, snapping and the model are post-processing. Clipping
///   bounds every contribution whatever the rows' norms, so no input contract is needed
///   beyond finite values (rows in the unit ball keep the logistic and Huber gradients within
///   C = 1 unclipped).
/// - The sampler's rate is q rounded up to a multiple of 2⁻⁵³ (exact Bernoulli from a
///   53-bit integer), and the accounting uses that rounded-up rate.
/// - Compose it with other mechanisms through [`DpSgd::rdp_curve`] and dp-noise's
///   [`dp_noise::RdpAccountant`] (which also takes zCDP mechanisms such as
///   [`crate::GaussianErm`]'s output perturbation) rather than by adding (ε, δ) pairs.
///
/// # Numerics
/// The Gaussian noise is drawn in floating point ([`GaussianVector`]) and never released:
/// the guarantee holds in idealized real arithmetic, as for objective perturbation's linear
/// term; the released weights are rounded to a public grid far below the noise so that
/// their low bits carry nothing. (The snapped discrete Gaussian would remove that caveat
/// for the noisy sums, but the subsampled analysis is proved for the continuous Gaussian.)
/// The guarantee covers the model, not the time of the fit: the work per step follows the
/// batch drawn and its rows' stored entries (as for the other mechanisms, whose solver time
/// depends on the data too).
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    config: DpSgdConfig,
    noise_multiplier: f64,
    curve: RdpCurve,
    epsilon: f64,
    /// The replace-one ε of the same noise (= `epsilon` for a replace-one configuration):
    /// what the trainer trait, whose promise is replace-one, reports.
    replace_one_epsilon: f64,
}

impl DpSgd {
    /// DP-SGD with noise multiplier `noise_multiplier` (σ > 0, finite): its ε at the
    /// configuration's δ is computed here. Every parameter is checked here.
    pub fn new(config: DpSgdConfig, noise_multiplier: f64) -> Result<Self, ErmError> {
        Self::accounted(config, noise_multiplier, None)
    }

    /// [`DpSgd::new`], the PLD accountant on the grid `grid` when given (a calibration's),
    /// else on [`pld_discretization`] of the RDP ε.
    fn accounted(
        config: DpSgdConfig,
        noise_multiplier: f64,
        grid: Option<f64>,
    ) -> Result<Self, ErmError> {
        config.check()?;
        if !(noise_multiplier.is_finite() && noise_multiplier > 0.0) {
            return Err(ErmError::InvalidParameter {
                what: "noise_multiplier",
                value: noise_multiplier,
                requirement: "finite and > 0",
            });
        }
        let (_, rate) = config.realized_rate();
        let curve = RdpCurve::subsampled_gaussian(
            config.neighbours.relation(),
            rate,
            noise_multiplier,
            config.steps,
            &default_orders(),
        )?;
        let (rdp_epsilon, _) = curve.epsilon(config.delta)?;
        let epsilon = match config.accountant {
            Accountant::Rdp => rdp_epsilon,
            Accountant::Pld => pld_epsilon(
                config.neighbours.relation(),
                rate,
                noise_multiplier,
                config.steps,
                config.delta,
                grid.unwrap_or_else(|| {
                    pld_discretization(round_up_to_bits(rdp_epsilon, EPSILON_BITS))
                }),
            )?,
        };
        check_accounted_epsilon(epsilon, noise_multiplier)?;
        let replace_one_epsilon = match (config.neighbours, config.accountant) {
            (SgdNeighbours::ReplaceOne, _) => epsilon,
            // The divisor is public, so the same noise is also a replace-one mechanism.
            (SgdNeighbours::AddRemove { .. }, Accountant::Pld) => {
                crate::sgd_accounting::pld_replace_one_epsilon(
                    rate,
                    noise_multiplier,
                    config.steps,
                    config.delta,
                    epsilon,
                )?
            }
            (SgdNeighbours::AddRemove { .. }, Accountant::Rdp) => {
                RdpCurve::subsampled_gaussian(
                    Neighbouring::ReplaceOne,
                    rate,
                    noise_multiplier,
                    config.steps,
                    &default_orders(),
                )?
                .epsilon(config.delta)?
                .0
            }
        };
        check_accounted_epsilon(replace_one_epsilon, noise_multiplier)?;
        Ok(Self {
            config,
            noise_multiplier,
            curve,
            epsilon,
            replace_one_epsilon,
        })
    }

    /// DP-SGD calibrated to (`epsilon`, the configuration's δ): the smallest noise
    /// multiplier (rounded up) whose curve, for the configuration's relation, certifies it —
    /// by the configuration's [`Accountant`]: for PLD, to within
    /// [`crate::CALIBRATION_TOLERANCE`] (0.1%) of the smallest σ, on the grid
    /// [`pld_discretization`] of the target, once per configuration and process (remembered;
    /// 0.3–1.5 s at the rule's settings on Adult).
    pub fn for_target(config: DpSgdConfig, epsilon: f64) -> Result<Self, ErmError> {
        config.check()?;
        crate::error::check_epsilon(epsilon)?;
        let (_, rate) = config.realized_rate();
        if config.accountant == Accountant::Pld {
            let (sigma, grid) = pld_calibration(
                config.neighbours.relation(),
                rate,
                config.steps,
                epsilon,
                config.delta,
            )?;
            let fitted = Self::accounted(config, sigma, Some(grid))?;
            debug_assert!(
                fitted.epsilon <= epsilon,
                "ε {:e} above the target {epsilon:e} at σ {sigma:e}, h {grid:e}, q {rate:e}, T {}",
                fitted.epsilon,
                config.steps
            );
            return Ok(fitted);
        }
        let sigma = smallest_noise_multiplier(
            config.neighbours.relation(),
            rate,
            config.steps,
            epsilon,
            config.delta,
            &default_orders(),
        )?;
        let fitted = Self::new(config, sigma)?;
        debug_assert!(fitted.epsilon <= epsilon);
        Ok(fitted)
    }

    /// The configuration.
    pub fn config(&self) -> &DpSgdConfig {
        &self.config
    }

    /// The noise multiplier σ (noise standard deviation σC on each batch sum).
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// The sampling rate the sampler realizes and the accounting uses: q rounded up to a
    /// multiple of 2⁻⁵³.
    pub fn sampling_rate(&self) -> f64 {
        self.config.realized_rate().1
    }

    /// The ε of the (ε, δ) guarantee for the configuration's relation, rounded up.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The ε of a replace-one guarantee of the same fit: [`DpSgd::epsilon`] for a
    /// replace-one configuration; for add/remove, the replace-one curve of the same σ, q and
    /// T (the divisor being public, the fit is also that replace-one mechanism), roughly
    /// twice the add/remove ε. What the [`Trainer`] trait reports, whose promise is
    /// replace-one.
    pub fn replace_one_epsilon(&self) -> f64 {
        self.replace_one_epsilon
    }

    /// The δ of the guarantee.
    pub fn delta(&self) -> f64 {
        self.config.delta
    }

    /// The RDP curve one fit spends ([`default_orders`], the configuration's relation): what
    /// an [`dp_noise::RdpAccountant`] is charged (which takes replace-one curves only).
    pub fn rdp_curve(&self) -> &RdpCurve {
        &self.curve
    }

    /// The accountant that certified [`DpSgd::epsilon`].
    pub fn accountant(&self) -> Accountant {
        self.config.accountant
    }

    /// The mechanism a model's metadata records: σ, the realized q, T, C, the guarantee,
    /// its relation and its accountant.
    pub fn mechanism(&self) -> Mechanism {
        let (epsilon, delta) = (self.epsilon, self.config.delta);
        let accountant = self.config.accountant;
        let (noise_multiplier, sampling_rate) = (self.noise_multiplier, self.sampling_rate());
        let (steps, clip_norm) = (self.config.steps, self.config.clip_norm);
        match self.config.neighbours {
            SgdNeighbours::ReplaceOne => Mechanism::DpSgd {
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                accountant,
            },
            SgdNeighbours::AddRemove { expected_batch } => Mechanism::DpSgdAddRemove {
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch,
                accountant,
            },
        }
    }

    /// Trains on `data` (any finite rows, labels ±1); see `# Privacy`.
    pub fn fit<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        rng: &mut R,
    ) -> Result<SgdModel, ErmError> {
        self.fit_interruptible(data, rng, &|| false)
    }

    /// [`DpSgd::fit`], asking `interrupted` before each step whether to stop (a front door's
    /// Ctrl-C): when it answers true the fit ends with [`ErmError::Interrupted`] and releases
    /// nothing. Steps already taken drew noise, so the fit's spend stands. The hook sees no
    /// data; the model, when it completes, is the one [`DpSgd::fit`] gives.
    pub fn fit_interruptible<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        rng: &mut R,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<SgdModel, ErmError> {
        self.fit_mutated(data, rng, 1.0, None, interrupted)
    }

    /// The fit with σ multiplied by `factor`: 1 in production; the audit passes less to
    /// prove it catches too little noise.
    #[cfg(test)]
    pub(crate) fn fit_with_noise_factor<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        rng: &mut R,
        factor: f64,
    ) -> Result<SgdModel, ErmError> {
        self.fit_mutated(data, rng, factor, None, &|| false)
    }

    /// The fit with σ multiplied by `factor`, each gradient clipped to `clip_against`
    /// instead of C where it is set (the noise staying σC), and `interrupted` asked before
    /// each step: `(1, None)` in production; the audits pass a mutant to prove they catch it.
    pub(crate) fn fit_mutated<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        rng: &mut R,
        factor: f64,
        clip_against: Option<f64>,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<SgdModel, ErmError> {
        Task::Classification.check_loss(self.config.loss)?;
        self.descend(data, None, rng, factor, clip_against, interrupted)
    }

    /// Trains a regressor on `data` with this configuration's loss (a regression loss:
    /// [`Loss::huber_regression`]); see `# Privacy`.
    ///
    /// # Privacy
    /// [`DpSgd`]'s guarantee ((ε, δ)-DP for the configuration's relation, at the ε and δ
    /// [`DpSgd::epsilon`] and [`DpSgd::delta`] report), for [`RegressionSet`]'s data: each
    /// row's gradient is `ℓ'(fᵀx − t)·x` with t its target scaled into [−1, 1] by the
    /// public bounds, clipped to norm C like a classifier's `ℓ'(y·fᵀx)·y·x`. The clipping
    /// bounds a replaced row's effect on a batch sum by C whatever the row and target,
    /// which is all the accounting uses (docs/src/reference/algorithms.md §10). Refused
    /// before any step: a classification loss.
    pub fn fit_regression<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
    ) -> Result<RegressionModel, ErmError> {
        self.fit_regression_interruptible(data, rng, &|| false)
    }

    /// [`DpSgd::fit_regression`], asking `interrupted` before each step whether to stop, as
    /// [`DpSgd::fit_interruptible`] does.
    pub fn fit_regression_interruptible<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<RegressionModel, ErmError> {
        self.fit_regression_mutated(data, rng, 1.0, interrupted)
    }

    /// [`DpSgd::fit_regression`] with σ multiplied by `factor` (1 in production; the audit
    /// passes less).
    pub(crate) fn fit_regression_mutated<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
        factor: f64,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<RegressionModel, ErmError> {
        Task::Regression.check_loss(self.config.loss)?;
        let rows = data.rows().to_examples();
        let fit = self.descend(
            &rows,
            Some(data.scaled_targets()),
            rng,
            factor,
            None,
            interrupted,
        )?;
        Ok(RegressionModel::from_linear(
            fit.into_model(),
            data.target_scale(),
        ))
    }

    /// The descent: each row's margin is `y·fᵀx`, less its offset `t` where `offsets` are
    /// given (a regression's scaled targets, every label +1).
    fn descend<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        offsets: Option<&[f64]>,
        rng: &mut R,
        factor: f64,
        clip_against: Option<f64>,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<SgdModel, ErmError> {
        let (n, d) = (data.len(), data.features());
        let config = &self.config;
        let noise = GaussianVector::new(d, self.noise_multiplier * config.clip_norm * factor)?;
        let (threshold, rate) = config.realized_rate();
        let scale = config.sum_scale(n, rate);
        let (eta, lambda, clip) = (
            config.learning_rate,
            config.regularization,
            clip_against.unwrap_or(config.clip_norm),
        );
        let norms: Vec<f64> = (0..n)
            .map(|i| {
                data.inputs()
                    .row(i)
                    .values()
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let mut w = vec![0.0; d];
        let mut average = vec![0.0; if config.average_iterates { d } else { 0 }];
        let mut sum = vec![0.0; d];
        // Per step: the batch's indices, then the members' clipped gradient coefficients, then
        // their sum. Apart, each loop is free of the others' dependencies: the margins and
        // the loss's derivative of different rows overlap in the processor, where one loop
        // doing all three waited on each row's exp in turn. Same operations in the same
        // order as one loop: the fit is bit for bit the same.
        let mut batch = vec![0usize; n];
        let mut coefficients = Vec::with_capacity(n);
        for step in 1..=config.steps {
            if interrupted() {
                return Err(ErmError::Interrupted);
            }
            let mut members = 0;
            for i in 0..n {
                // Branch-free: a step's q·n members are spread at random over the rows.
                batch[members] = i;
                members += usize::from(rng.next_u64() >> 11 < threshold);
            }
            let batch = &batch[..members];
            coefficients.clear();
            coefficients.extend(batch.iter().map(|&i| {
                let (y, t) = (data.labels()[i], offsets.map_or(0.0, |t| t[i]));
                config.loss.derivative(y * data.inputs().row(i).dot(&w) - t) * y
            }));
            for (slope, &i) in coefficients.iter_mut().zip(batch) {
                let length = slope.abs() * norms[i];
                // Clip to C; the factor is rounded down so the clipped length stays ≤ C.
                if length > clip {
                    *slope *= (clip / length).next_down();
                }
            }
            sum.fill(0.0);
            for (&coef, &i) in coefficients.iter().zip(batch) {
                data.inputs()
                    .row(i)
                    .for_each_nonzero(&mut |j, v| sum[j] += coef * v);
            }
            let draw = noise.sample(rng);
            for ((wj, sj), zj) in w.iter_mut().zip(&sum).zip(&draw) {
                *wj -= eta * ((sj + zj) * scale + lambda * *wj);
            }
            if config.average_iterates {
                let k = step as f64;
                for (aj, wj) in average.iter_mut().zip(&w) {
                    *aj += (wj - *aj) / k;
                }
            }
        }
        let mut weights = if config.average_iterates { average } else { w };
        if weights.iter().any(|w| !w.is_finite()) {
            // A function of the noisy steps only (post-processing): safe to report.
            return Err(ErmError::InvalidParameter {
                what: "learning_rate",
                value: eta,
                requirement: "small enough that the iterates stay finite (they diverged)",
            });
        }
        let step_noise = eta * self.noise_multiplier * config.clip_norm * factor * scale;
        snap_to_grid(&mut weights, release_grid(step_noise));
        let metadata = ModelMetadata {
            mechanism: self.mechanism(),
            loss: config.loss,
            regularization: config.regularization,
            features: d,
            noise_groups: None,
            feature_map: None,
            crate_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        Ok(SgdModel {
            model: LinearModel::new(weights, metadata),
        })
    }
}

/// Refuses a σ whose accounted ε is infinite or above [`MAX_EPSILON`]: such a "guarantee"
/// says nothing (σ = 10⁻³⁰⁰ accounts ε = ∞).
fn check_accounted_epsilon(epsilon: f64, noise_multiplier: f64) -> Result<(), ErmError> {
    if epsilon <= MAX_EPSILON {
        Ok(())
    } else {
        Err(ErmError::InvalidParameter {
            what: "noise_multiplier",
            value: noise_multiplier,
            requirement: "large enough that the accounted epsilon at this delta, sampling \
                          rate and number of steps is finite and at most MAX_EPSILON = 1000 \
                          (a larger epsilon guarantees nothing)",
        })
    }
}

/// A linear model trained by [`DpSgd`]: a [`LinearModel`] whose metadata records
/// [`Mechanism::DpSgd`] or [`Mechanism::DpSgdAddRemove`] (ε, δ, σ, the realized q, T, C,
/// the relation), so it saves and loads in the model container like every linear model
/// ([`SgdModel::into_model`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SgdModel {
    model: LinearModel,
}

impl SgdModel {
    /// The weights w.
    pub fn weights(&self) -> &[f64] {
        self.model.weights()
    }

    /// The ε of the (ε, δ) guarantee the model was trained with.
    pub fn epsilon(&self) -> f64 {
        // Always Some: DP-SGD's mechanism carries its ε.
        self.model.epsilon().unwrap_or(f64::INFINITY)
    }

    /// The δ of the guarantee.
    pub fn delta(&self) -> f64 {
        self.model.metadata().mechanism.delta()
    }

    /// The linear model, with its metadata.
    pub fn model(&self) -> &LinearModel {
        &self.model
    }

    /// The linear model, to save or to score with.
    pub fn into_model(self) -> LinearModel {
        self.model
    }
}

impl Classifier for SgdModel {
    fn input_features(&self) -> usize {
        self.model.weights().len()
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        crate::check_row(x, self.input_features())?;
        Ok(Features::dense(x.len(), x.to_vec())?.scores(self.model.weights())?[0])
    }

    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        rows.scores(self.model.weights())
    }
}

/// Trains through [`DpSgd::fit`]: an (ε, δ) trainer, so compositions that account pure ε
/// only refuse it (its δ is not 0). The trait's promise is for replace-one neighbours, so
/// its ε is [`DpSgd::replace_one_epsilon`] whatever the configuration's relation.
impl Trainer for DpSgd {
    type Model = SgdModel;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        Some(self.replace_one_epsilon)
    }

    fn delta(&self) -> f64 {
        self.config.delta
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<SgdModel, ErmError> {
        self.check_shape(data.len(), data.features())?;
        self.fit(data, rng)
    }

    /// The replace-one curve of its T steps of the Poisson-subsampled Gaussian (rate q,
    /// multiplier σ), whatever relation its ε was stated for: the trait's relation.
    fn rdp_curve(&self, orders: &[f64]) -> Option<RdpCurve> {
        RdpCurve::subsampled_gaussian(
            Neighbouring::ReplaceOne,
            self.sampling_rate(),
            self.noise_multiplier(),
            self.config.steps,
            orders,
        )
        .ok()
    }

    /// The noise's dimension limit; every other parameter was checked at construction.
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        let _ = rows;
        GaussianVector::new(features, 1.0)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "dpsgd_tests.rs"]
mod tests;
