//! The fits Python calls, as plain Rust: each is the path a Rust user of dp-erm or
//! dp-kernel writes (`TrainingSet::builder`, `ErmParams`, `OneVsRest`, `KernelParams`).

use dp_erm::{
    ErmError, ErmParams, Features, GaussianCalibration, LinearModel, Loss, NoiseCalibration,
    TrainingSet, TrainingSetBuilder,
};
use dp_kernel::{FeatureMap, Kernel, KernelModel, KernelParams, Sampling};
use dp_noise::{DpRng, FeatureGroups, InsecureSeededRng, ReleaseRng, Witnessed};

use dp_fit::outlook::{Outlook, RowScale};
use dp_fit::recipe::{ErmPlan, ErmRecipe, KernelName, SamplingName, fit_classes};
pub(crate) use dp_fit::recipe::{Mechanism, Regularization, binary_labels};
use dp_fit::sgd::SgdOptions;

use crate::error::CoreError;
use crate::rows::{RowTransform, Rows};

/// Where a fit's randomness comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Randomness {
    /// `DpRng`: ChaCha20 keyed from the operating system. The only private choice.
    Secure,
    /// `InsecureSeededRng::new(seed)`: reproducible and **not private** (Python's
    /// `dpml.InsecureSeed`).
    InsecureSeed(u64),
}

/// A generator for one fit.
pub(crate) fn generator(randomness: Randomness) -> Result<Box<dyn ReleaseRng + Send>, CoreError> {
    Ok(match randomness {
        Randomness::Secure => Box::new(DpRng::from_os_entropy()?),
        Randomness::InsecureSeed(seed) => Box::new(InsecureSeededRng::new(seed)),
    })
}

/// The generator of a fit, watched: what dp-fit's spend rule asks of it.
pub(crate) type Watched<'a> = Witnessed<'a, dyn ReleaseRng + Send>;

/// Runs `fit` on a watched `rng`: an error after the generator's first draw becomes
/// [`CoreError::AfterNoise`] — the spend stands, a ledger does not refund it (dp-fit's rule:
/// a fit is charged once it may have drawn noise) — and one before any draw is returned as
/// it was (a refusal, refunded).
pub(crate) fn drawing<T>(
    rng: &mut (dyn ReleaseRng + Send + 'static),
    fit: impl FnOnce(&mut Watched<'_>) -> Result<T, CoreError>,
) -> Result<T, CoreError> {
    let mut watched = Witnessed::new(rng);
    let result = fit(&mut watched);
    match result {
        Err(e) if watched.drew() => Err(e.after_noise()),
        other => other,
    }
}

/// Everything a linear fit needs besides the data.
#[derive(Clone, Debug)]
pub struct LinearSpec {
    /// The loss.
    pub loss: Loss,
    /// The mechanism and its (ε, δ).
    pub mechanism: Mechanism,
    /// How Λ is chosen.
    pub regularization: Regularization,
    /// The group of each input feature (the intercept gets a group of its own).
    pub feature_groups: Option<Vec<usize>>,
    /// The solver's certified gradient norm (None: dp-erm's default).
    pub tolerance: Option<f64>,
    /// The public row transform (linear estimators).
    pub transform: RowTransform,
}

/// What a fit released, and the public numbers behind it.
pub struct FitReport<M> {
    /// One model (binary) or one per class (one-vs-rest).
    pub models: Vec<M>,
    /// The regularization Λ used.
    pub regularization: f64,
    /// The ε of the whole release (None: not private).
    pub epsilon: Option<f64>,
    /// The δ of the whole release (0 for the pure-ε mechanisms).
    pub delta: f64,
    /// The calibration of each model's fit (public: parameters and sizes only).
    pub calibration: Option<NoiseCalibration>,
    /// The Gaussian mechanisms' calibration of each model's fit.
    pub gaussian: Option<GaussianCalibration>,
    /// DP-SGD's accounting of each model's fit.
    pub sgd: Option<SgdReport>,
    /// dp-fit's a-priori outlook of the fit, from public facts.
    pub outlook: Option<Outlook>,
}

impl FitReport<LinearModel> {
    /// What `plan` released as `models`, trained on `rows` rows of `features` features.
    pub(crate) fn of(
        plan: &ErmPlan,
        models: Vec<LinearModel>,
        rows: usize,
        features: usize,
    ) -> Self {
        FitReport {
            models,
            regularization: plan.regularization,
            epsilon: plan.epsilon,
            delta: plan.delta,
            calibration: plan.calibration,
            gaussian: plan.gaussian,
            sgd: None,
            outlook: plan.outlook(rows, features),
        }
    }
}

/// The public numbers of one DP-SGD fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdReport {
    /// The noise multiplier σ calibrated to the model's (ε, δ).
    pub noise_multiplier: f64,
    /// The realized Poisson sampling rate q.
    pub sampling_rate: f64,
    /// The number of steps T.
    pub steps: u64,
    /// Each model's ε as accounted (at most its share, rounded up), for the spec's relation.
    pub epsilon_per_model: f64,
    /// Each model's replace-one ε (the same as `epsilon_per_model` under replace-one).
    pub replace_one_epsilon_per_model: f64,
    /// Each model's δ.
    pub delta_per_model: f64,
    /// The accountant that certified each model: `"pld"` or `"rdp"`.
    pub accountant: &'static str,
    /// The expected batch trained with (the rule's, capped at n, where it chose it).
    pub batch_size: usize,
    /// The epochs trained with.
    pub epochs: f64,
    /// The learning rate η trained with.
    pub learning_rate: f64,
    /// The clipping norm C trained with.
    pub clip_norm: f64,
    /// Whether the iterates were averaged.
    pub average_iterates: bool,
}

impl SgdReport {
    /// The numbers of `sgd` (each model's trainer, built from the `resolved` options) at
    /// each model's δ.
    pub(crate) fn of(sgd: &dp_erm::DpSgd, resolved: &SgdOptions, delta_per_model: f64) -> Self {
        SgdReport {
            noise_multiplier: sgd.noise_multiplier(),
            sampling_rate: sgd.sampling_rate(),
            steps: sgd.config().steps,
            epsilon_per_model: sgd.epsilon(),
            replace_one_epsilon_per_model: sgd.replace_one_epsilon(),
            delta_per_model,
            accountant: sgd.accountant().name(),
            batch_size: resolved.batch_size,
            epochs: resolved.epochs,
            learning_rate: resolved.learning_rate,
            clip_norm: resolved.clip_norm,
            average_iterates: resolved.average_iterates,
        }
    }
}

/// The training set a Rust user builds from these rows: the scaled rows through
/// `TrainingSetBuilder` with its opt-in clipping and intercept.
pub fn training_set(
    rows: &Rows<'_>,
    labels: Vec<f64>,
    transform: &RowTransform,
) -> Result<TrainingSet, CoreError> {
    training_set_from(rows, labels, transform, 0)
}

/// [`training_set`] over rows that start at row `first_row` of a larger whole (a batch of a
/// partition): a refused row is named by its index in the whole.
pub fn training_set_from(
    rows: &Rows<'_>,
    labels: Vec<f64>,
    transform: &RowTransform,
    first_row: usize,
) -> Result<TrainingSet, CoreError> {
    row_builder(rows, transform)?
        .labels(labels)
        .build()
        .map_err(|e| named_row_error(e, transform, first_row))
}

/// The builder a Rust user fills with these rows: the scaled rows with the transform's
/// opt-in clipping and intercept, labels still to give (a classifier's) or none (a
/// regressor's, which `RegressionSet::new` sets).
pub(crate) fn row_builder(
    rows: &Rows<'_>,
    transform: &RowTransform,
) -> Result<TrainingSetBuilder, CoreError> {
    let mut scaled = transform.scaled_csr(rows)?;
    if !transform.clip {
        scaled.settle_rounding();
    }
    let builder = TrainingSet::builder(rows.features());
    let mut builder = if scaled.ordered {
        builder.csr_rows(scaled.indptr, scaled.indices, scaled.values)
    } else {
        // Rows out of column order (scipy allows them) go in as pairs, which the builder
        // sorts (refusing a repeated column).
        let pairs = scaled
            .indptr
            .windows(2)
            .map(|at| {
                let (start, end) = (at[0], at[1]);
                scaled.indices[start..end]
                    .iter()
                    .map(|&c| c as usize)
                    .zip(scaled.values[start..end].iter().copied())
                    .collect()
            })
            .collect();
        builder.sparse_rows(pairs)
    };
    if transform.clip {
        builder = builder.clip_rows_to_unit_ball();
    }
    if let Some(c) = transform.intercept {
        builder = builder.append_intercept(c);
    }
    Ok(builder)
}

/// A build error in the face's terms: a row above the norm bound is named by its index in
/// the whole (`first_row` on), never with its norm, which is the data's.
pub(crate) fn named_row_error(
    e: ErmError,
    transform: &RowTransform,
    first_row: usize,
) -> CoreError {
    match e {
        ErmError::RowNormAboveOne { row, .. } => CoreError::value(
            "X",
            format!(
                "row {} has a norm above data_norm = {}: pass a larger public bound \
                 (never one read from the data), or clip_rows=True to clip such rows",
                first_row + row,
                transform.norm_bound
            ),
        ),
        other => other.into(),
    }
}

impl LinearSpec {
    /// The recipe for rows of `features` input features: the groups extended by the
    /// intercept's own group, the transform's id as the models' feature map.
    pub(crate) fn recipe(&self, features: usize) -> Result<ErmRecipe, CoreError> {
        Ok(ErmRecipe {
            loss: self.loss,
            mechanism: self.mechanism,
            regularization: self.regularization,
            groups: self.groups(features)?,
            tolerance: self.tolerance,
            feature_map: self.transform.id(),
        })
    }

    /// The plan for `rows` rows of `features` input features and `class_count` classes
    /// (dp-fit's recipe): every refusal before any data are read.
    pub(crate) fn plan(
        &self,
        rows: usize,
        features: usize,
        class_count: usize,
    ) -> Result<ErmPlan, CoreError> {
        let plan = self.recipe(features)?.plan(
            rows,
            self.transform.output_features(features),
            class_count,
        );
        // A Gaussian mechanism's refusal names δ beside ε (and ρ as ρ).
        let (epsilon, delta) = (self.mechanism.epsilon(), self.mechanism.delta());
        plan.map_err(|e| match e {
            dp_fit::recipe::RecipeError::Erm(e) if delta > 0.0 => {
                crate::error::gaussian_refusal(e, epsilon.unwrap_or(f64::INFINITY), delta)
            }
            e => e.into(),
        })
    }

    /// The feature groups over the transformed features: the intercept in a group of its
    /// own.
    fn groups(&self, features: usize) -> Result<Option<FeatureGroups>, CoreError> {
        self.feature_groups
            .as_deref()
            .map(|g| model_groups(g, features, self.transform.intercept.is_some()))
            .transpose()
    }
}

/// The groups of the trained features from `group_of`, one group index per each of
/// `features` input features: the intercept, where there is one, in a group of its own.
pub(crate) fn model_groups(
    group_of: &[usize],
    features: usize,
    intercept: bool,
) -> Result<FeatureGroups, CoreError> {
    if group_of.len() != features {
        return Err(CoreError::value(
            "feature_groups",
            format!(
                "has {} entries for {features} features (one group index per feature)",
                group_of.len()
            ),
        ));
    }
    let mut all = group_of.to_vec();
    if intercept {
        all.push(group_of.iter().max().map_or(0, |g| g + 1));
    }
    Ok(FeatureGroups::new(&all)?)
}

/// Checks class indices against the rows and the classes, naming `y`.
pub(crate) fn check_classes(
    classes: &[usize],
    rows: usize,
    class_count: usize,
) -> Result<(), CoreError> {
    if classes.len() != rows {
        return Err(CoreError::value(
            "y",
            format!("has {} labels for {rows} rows of X", classes.len()),
        ));
    }
    if class_count < 2 {
        return Err(CoreError::value(
            "classes",
            format!("has {class_count} classes; at least 2 are required"),
        ));
    }
    // dp-erm's one ceiling on K, for every one-vs-rest path.
    dp_erm::OneVsRest::check_class_count(class_count)?;
    if let Some(row) = classes.iter().position(|&c| c >= class_count) {
        return Err(CoreError::value(
            "y",
            format!("row {row} has a class index outside 0..{class_count}"),
        ));
    }
    Ok(())
}

/// Trains a linear classifier by dp-fit's recipe: one binary model, or K one-vs-rest
/// models at (ε/K, δ/K). `classes[i]` is row i's class index.
pub fn fit_linear(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    spec: &LinearSpec,
    randomness: Randomness,
) -> Result<FitReport<LinearModel>, CoreError> {
    Ok(fit_linear_bounded(rows, classes, class_count, spec, None, randomness)?.0)
}

/// [`fit_linear`], with the row bound B released privately first when `norm_epsilon` is
/// given (`data_norm="private"`: [`privately_bounded`]; `spec`'s mechanism then carries the
/// fit's share of ε). Returns the fit and the transform it trained with.
pub fn fit_linear_bounded(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    spec: &LinearSpec,
    norm_epsilon: Option<f64>,
    randomness: Randomness,
) -> Result<(FitReport<LinearModel>, RowTransform), CoreError> {
    let rows = rows.checked()?;
    spec.transform.checked()?;
    check_classes(classes, rows.len(), class_count)?;
    // Every refusal of the parameters, before the rows are touched.
    let plan = spec.plan(rows.len(), rows.features(), class_count)?;
    let mut rng = generator(randomness)?;
    let (models, transform) = drawing(&mut *rng, |rng| {
        let transform = match norm_epsilon {
            Some(epsilon) => privately_bounded(&rows, spec.transform, epsilon, rng)?,
            None => spec.transform,
        };
        let data = training_set(&rows, binary_labels(classes), &transform)?;
        let models = plan.fit(&data, classes, rng)?;
        if transform == spec.transform {
            return Ok((models, transform));
        }
        // The plan recorded the placeholder bound: each model records the released one,
        // which its file's loaders scale new rows by.
        let id = transform.id();
        let models = models
            .into_iter()
            .map(|m| m.with_feature_map(&id))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((models, transform))
    })?;
    let report = FitReport::of(
        &plan,
        models,
        rows.len(),
        transform.output_features(rows.features()),
    );
    Ok((report, transform))
}

/// `transform` with its bound B released privately from `rows` (`data_norm="private"`):
/// dp-fit's private quantile of the rows' norms ([`dp_fit::private_norm`]) at `epsilon`,
/// rows above it clipped to it.
///
/// # Privacy
/// ε-DP (replace-one, n public) by dp-fit's `private_norm`; the clipping and scaling that
/// follow act on each row alone, so the fit on the result composes with it.
pub(crate) fn privately_bounded<R: ReleaseRng + ?Sized>(
    rows: &Rows<'_>,
    transform: RowTransform,
    epsilon: f64,
    rng: &mut R,
) -> Result<RowTransform, CoreError> {
    let mut counts = dp_fit::private_norm::row_norm_counts();
    let mut row = Vec::new();
    for r in 0..rows.len() {
        row.clear();
        rows.for_each_entry(r, |_, v| row.push(v));
        counts.add_row_norm(&row)?;
    }
    let released = dp_fit::private_norm::release_counted_row_norm(&counts, epsilon, rng)?;
    Ok(RowTransform {
        norm_bound: released.value().bound(),
        clip: true,
        ..transform
    })
}

/// Everything a DP-SGD fit needs besides the data (dp-erm's `DpSgdConfig`, in the terms a
/// Python user gives: an expected batch size and epochs over the public n).
#[derive(Clone, Debug)]
pub struct SgdSpec {
    /// The ε of the whole release.
    pub epsilon: f64,
    /// The δ of the whole release, in (0, 1).
    pub delta: f64,
    /// The options, as dp-fit takes them from every face (the rule, the schedule, the
    /// relation and, under add/remove, the public n̂).
    pub options: SgdOptions,
    /// The public row transform: a scale (no norm bound is needed for privacy: the
    /// gradients are clipped) and the intercept feature.
    pub transform: RowTransform,
}

/// The rows through the public transform (scale, intercept), unchecked in norm: DP-SGD
/// clips each example's gradient, so no unit-ball contract is needed. Dense rows stay
/// dense and CSR rows sparse.
fn sgd_features(rows: &Rows<'_>, transform: &RowTransform) -> Result<Features, CoreError> {
    let width = transform.output_features(rows.features());
    let features = match rows {
        Rows::Dense { .. } => {
            let mut values = crate::memory::matrix("the rows", rows.len(), width, 0.0)?;
            for (r, row) in values.chunks_mut(width.max(1)).enumerate() {
                transform.write_scoring_row(rows, r, row);
            }
            Features::dense(width, values)?
        }
        // Sparse rows stay sparse: a step's work follows the stored entries, not n·d.
        Rows::Csr { .. } => Features::sparse(
            width,
            crate::memory::collected(
                "the rows",
                rows.len(),
                (0..rows.len()).map(|r| transform.scoring_entries(rows, r)),
            )?,
        )?,
    };
    Ok(features)
}

/// Trains with dp-erm's `DpSgd`, σ calibrated to (ε, δ) for the spec's relation: one model,
/// or one per class at (ε/K, δ/K) (basic composition; each share rounded down).
pub fn fit_sgd(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    spec: &SgdSpec,
    randomness: Randomness,
) -> Result<FitReport<LinearModel>, CoreError> {
    fit_sgd_interruptible(rows, classes, class_count, spec, None, randomness, &|| {
        false
    })
    .map(|(fit, _)| fit)
}

/// [`fit_sgd`], stopping with `ErmError::Interrupted` when `interrupted` answers true
/// before a step (Python's Ctrl-C); the spend stands, as for any error after noise. With
/// `norm_epsilon`, the rows' scale B is first released from them at that ε
/// ([`privately_bounded`]: pure ε, composed sequentially with DP-SGD's (ε, δ); rows above
/// it clipped) and replaces the transform's; the transform the models were trained with is
/// returned.
pub fn fit_sgd_interruptible(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    spec: &SgdSpec,
    norm_epsilon: Option<f64>,
    randomness: Randomness,
    interrupted: &dyn Fn() -> bool,
) -> Result<(FitReport<LinearModel>, RowTransform), CoreError> {
    let rows = rows.checked()?;
    let transform = spec.transform.checked()?;
    check_classes(classes, rows.len(), class_count)?;
    // Every refusal of the parameters (and σ's calibration), before the rows are touched:
    // dp-fit's trainer at each model's share of (ε, δ).
    let (sgd, resolved) =
        spec.options
            .trainer_for_classes(spec.epsilon, spec.delta, rows.len(), class_count)?;
    let delta_share = sgd.config().delta;
    dp_erm::Trainer::check_shape(&sgd, rows.len(), transform.output_features(rows.features()))?;
    let mut rng = generator(randomness)?;
    // The features are built before any draw (an allocation refused costs nothing), except
    // with a bound still to release: then after it, once (a refusal there stands as spent).
    let public = match norm_epsilon {
        None => Some(sgd_features(&rows, &transform)?),
        Some(_) => None,
    };
    let (fitted, transform) = drawing(&mut *rng, |rng| {
        let (inputs, transform) = match (public, norm_epsilon) {
            (Some(inputs), _) => (inputs, transform),
            (None, epsilon) => {
                let epsilon = epsilon.expect("no features only with a bound to release");
                let transform = privately_bounded(&rows, transform, epsilon, rng)?;
                (sgd_features(&rows, &transform)?, transform)
            }
        };
        let id = transform.id();
        let stoppable = crate::interrupt::StoppableSgd {
            sgd: &sgd,
            interrupted,
        };
        let models = fit_classes(&stoppable, inputs, classes, class_count, rng)?
            .into_iter()
            .map(|fitted| Ok(fitted.into_model().with_feature_map(&id)?))
            .collect::<Result<Vec<_>, CoreError>>()?;
        Ok((models, transform))
    })?;
    let report = FitReport {
        models: fitted,
        regularization: resolved.regularization,
        epsilon: Some(spec.epsilon),
        delta: spec.delta,
        calibration: None,
        gaussian: None,
        sgd: Some(SgdReport::of(&sgd, &resolved, delta_share)),
        outlook: Some(Outlook::sgd(spec.options.schedule_rows(rows.len()))),
    };
    Ok((report, transform))
}

/// The random feature map of a kernel estimator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapSpec {
    /// The kernel the map approximates.
    pub kernel: Kernel,
    /// How the frequencies are drawn.
    pub sampling: Sampling,
    /// D, the number of random features.
    pub components: usize,
}

impl MapSpec {
    /// Draws the map for rows of `features` features: public randomness, drawn before any
    /// row is read.
    pub(crate) fn draw(
        &self,
        features: usize,
        rng: &mut dyn ReleaseRng,
    ) -> Result<FeatureMap, CoreError> {
        Ok(FeatureMap::draw(
            self.kernel,
            self.sampling,
            features,
            self.components,
            rng,
        )?)
    }

    /// The map a face names by dp-fit's kernel and sampling names.
    pub(crate) fn named(
        kernel: &str,
        gamma: f64,
        sampling: &str,
        components: usize,
    ) -> Result<MapSpec, CoreError> {
        Ok(MapSpec {
            kernel: kernel.parse::<KernelName>()?.kernel(gamma)?,
            sampling: sampling.parse::<SamplingName>()?.into(),
            components,
        })
    }
}

/// The plan of a random-features fit of `class_count` classes on `rows` rows: the linear
/// recipe on the D = `components` random features (unit-norm by construction: no transform),
/// with each model's pure-ε parameters.
pub(crate) fn kernel_plan(
    spec: &LinearSpec,
    rows: usize,
    components: usize,
    class_count: usize,
) -> Result<(ErmPlan, ErmParams), CoreError> {
    let linear = LinearSpec {
        transform: RowTransform {
            norm_bound: 1.0,
            clip: false,
            intercept: None,
        },
        ..spec.clone()
    };
    // The linear model's features are the map's D random features: a refusal of their
    // count names the parameter the caller gave (n_components), not "features".
    let plan = linear
        .plan(rows, components, class_count)
        .map_err(|e| match e {
            CoreError::Erm(ErmError::InvalidCount {
                what: "features",
                value,
                requirement,
            }) => CoreError::value(
                "n_components",
                format!("= {value} is invalid: it must be {requirement}"),
            ),
            other => other,
        })?;
    let Some(params) = plan.params().cloned() else {
        return Err(CoreError::value(
            "delta",
            "> 0 (the Gaussian mechanisms) applies to LogisticRegression and HuberSVC \
             (fits in memory or over Spark, and PrivateSearch with method='split'), not \
             to kernel models",
        ));
    };
    Ok((plan, params))
}

/// Raw rows as dp-erm's `Features` (kernel inputs need no norm bound).
pub(crate) fn features(rows: &Rows<'_>) -> Result<Features, CoreError> {
    Ok(match rows {
        Rows::Dense { values, features } => Features::dense(
            *features,
            crate::memory::collected("the rows", values.len(), values.iter().copied())?,
        )?,
        Rows::Csr { .. } => {
            let sparse = crate::memory::collected(
                "the rows",
                rows.len(),
                (0..rows.len()).map(|r| {
                    let mut row = Vec::new();
                    rows.for_each_entry(r, |c, v| row.push((c, v)));
                    row
                }),
            )?;
            Features::sparse(rows.features(), sparse)?
        }
    })
}

/// Trains a random-features kernel classifier: the map drawn from the fit's generator, then
/// `KernelParams::fit` (binary) or one fit per class at ε/K sharing the map (one-vs-rest,
/// composed as dp-erm's `OneVsRest` composes its fits).
pub fn fit_kernel(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    spec: &LinearSpec,
    map: &MapSpec,
    randomness: Randomness,
) -> Result<FitReport<KernelModel>, CoreError> {
    let rows = rows.checked()?;
    check_classes(classes, rows.len(), class_count)?;
    if spec.transform.intercept.is_some() || spec.feature_groups.is_some() {
        return Err(CoreError::value(
            "RandomFeaturesSVC",
            "takes no intercept or feature groups (its features are random cosines)",
        ));
    }
    let (plan, per_model) = kernel_plan(spec, rows.len(), map.components, class_count)?;
    let mut rng = generator(randomness)?;
    let kernel = KernelParams::new(map.draw(rows.features(), &mut *rng)?, per_model.clone());
    // Every refusal of the parameters and sizes, before the map touches a row.
    dp_erm::Trainer::check_shape(&kernel, rows.len(), rows.features())?;
    let inputs = features(&rows)?;
    // The map above is public randomness drawn before any row is read: only the fits'
    // draws decide whether the spend stands.
    let fitted = drawing(&mut *rng, |rng| {
        Ok(fit_classes(&kernel, inputs, classes, class_count, rng)?)
    })?;
    Ok(FitReport {
        models: fitted,
        regularization: plan.regularization,
        epsilon: plan.epsilon,
        delta: 0.0,
        calibration: plan.calibration,
        gaussian: None,
        sgd: None,
        // Raw arrays carry no public scale: the width is judged for features in [0, 1].
        outlook: plan
            .outlook(rows.len(), map.components)
            .map(|o| o.with_kernel_width(&map.kernel, rows.features(), RowScale::UnitFeatures)),
    })
}
