//! What the ablation varies: the loss (and Huber width), the calibration rule, and how the
//! rows are encoded and scaled before training.

use dp_datasets::Dataset;
use dp_erm::{ErmParams, Loss, ObjectiveCalibration};
use dp_noise::FeatureGroups;
use serde::Serialize;

/// How the rows are encoded and scaled. Every lever is a per-row transformation fixed before
/// the data are seen (public knowledge of the schema), so none costs privacy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Lever {
    /// The papers' preprocessing: one-hot, column max-scaling, each row scaled to norm ≤ 1
    /// (every Adult and KDD row has norm > 1 before, so every row ends at norm 1).
    Paper,
    /// A constant feature 0.5 appended after the row is scaled to norm √0.75, so the row
    /// norm stays 1 and the intercept is regularized like every other weight (docs/src/reference/algorithms.md §4).
    Intercept,
    /// Adult: `native-country` collapsed to United-States / other and the `education`
    /// one-hot dropped (`education-num` encodes the same levels).
    PublicEncoding,
    /// Rows divided by the largest norm the schema allows (√(attributes)), instead of each
    /// row scaled to norm 1: rows keep their relative lengths.
    PublicRowBound,
    /// The papers' rows, with objective perturbation's noise shaped to the one-hot groups
    /// (`ErmParams::group_noise`, groups from the column names `attribute=level`).
    GroupNoise,
    /// KDD: the schema's count columns (seconds, bytes, events) as `ln(1 + x)` before the
    /// max-scaling (`dp_datasets::KddEncoding::LogCounts`). Made by the loader from the raw
    /// values, so it is handed to the grid already encoded.
    LogCounts,
}

impl Lever {
    /// The levers that change the rows, each compared with the papers' encoding.
    pub const ENCODINGS: [Lever; 4] = [
        Self::Intercept,
        Self::PublicEncoding,
        Self::PublicRowBound,
        Self::LogCounts,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Paper => "paper encoding, unit-norm rows",
            Self::Intercept => "+ intercept feature (0.5)",
            Self::PublicEncoding => "public encoding (collapsed country, no education one-hot)",
            Self::PublicRowBound => "rows divided by the schema's norm bound",
            Self::GroupNoise => "noise shaped to the one-hot groups",
            Self::LogCounts => "count columns as ln(1 + x) before max-scaling",
        }
    }

    /// The losses (`None`: logistic; `Some(h)`: Huber of width h) an encoding lever is run
    /// with in the ablation and compared on: logistic and Huber 0.5, and for log counts also
    /// Huber 1, the rules' loss.
    pub fn widths(self) -> &'static [Option<f64>] {
        match self {
            Self::LogCounts => &[None, Some(0.5), Some(1.0)],
            _ => &[None, Some(0.5)],
        }
    }

    /// Whether the headline's best-in-hindsight columns may pick this lever. Log counts may
    /// not: the lever was added after KDD's numbers were known, so it is reported as an
    /// effect (the lever table, its own end-to-end rows), not as part of the best result.
    pub fn in_headline(self) -> bool {
        self != Self::LogCounts
    }

    /// The lever whose rows this one trains on: group-shaped noise changes the mechanism,
    /// not the rows, so it shares the papers' encoding (one copy of the data, one training
    /// set per fold).
    pub fn rows(self) -> Lever {
        match self {
            Self::GroupNoise => Self::Paper,
            other => other,
        }
    }

    /// The dataset as this lever encodes it from the papers' rows; `None` where the lever
    /// does not apply (the public encoding is Adult's) or needs the raw values (log counts:
    /// the loader encodes them).
    pub fn apply(self, data: &Dataset) -> Option<Dataset> {
        match self {
            Self::Paper | Self::GroupNoise => Some(data.clone()),
            Self::Intercept => Some(with_intercept(data, INTERCEPT)),
            Self::PublicEncoding => public_encoding(data),
            Self::PublicRowBound => Some(divided_by_schema_bound(data)),
            Self::LogCounts => None,
        }
    }
}

/// The one-hot groups of a dataset's columns: the levels of one attribute (`attribute=…`)
/// form a group, every other column is a group of its own. Public: read off the schema.
pub fn feature_groups(data: &Dataset) -> Result<FeatureGroups, dp_noise::NoiseError> {
    let mut group_of = Vec::with_capacity(data.features());
    let mut previous: Option<&str> = None;
    for name in &data.feature_names {
        let one_hot = name.contains('=');
        let same = one_hot && previous == Some(attribute(name));
        let next = group_of
            .last()
            .map_or(0, |&g: &usize| g + usize::from(!same));
        group_of.push(next);
        previous = one_hot.then(|| attribute(name));
    }
    FeatureGroups::new(&group_of)
}

/// The value of the intercept feature.
const INTERCEPT: f64 = 0.5;

/// One configuration of the ablation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Variant {
    /// `None`: logistic; `Some(h)`: Huber of width h.
    pub huber_width: Option<f64>,
    pub calibration: ObjectiveCalibration,
    pub lever: Lever,
}

impl Variant {
    pub const fn new(
        huber_width: Option<f64>,
        calibration: ObjectiveCalibration,
        lever: Lever,
    ) -> Self {
        Self {
            huber_width,
            calibration,
            lever,
        }
    }

    pub fn loss(&self) -> Loss {
        match self.huber_width {
            None => Loss::Logistic,
            Some(h) => Loss::huber(h).expect("the ablation's widths are valid"),
        }
    }

    pub fn loss_label(&self) -> String {
        match self.huber_width {
            None => "logistic".into(),
            Some(h) => format!("Huber h = {h}"),
        }
    }

    pub fn label(&self) -> String {
        let rule = match self.calibration {
            ObjectiveCalibration::Cms11 => "CMS11 rule",
            ObjectiveCalibration::CliffFree => "cliff-free",
        };
        match self.lever {
            Lever::Paper => format!("{}, {rule}", self.loss_label()),
            lever => format!("{}, {rule}, {}", self.loss_label(), lever.label()),
        }
    }

    /// The variant's parameters; `groups` are the data's one-hot groups, used by
    /// [`Lever::GroupNoise`] only.
    pub fn params(&self, lambda: f64, epsilon: f64, groups: &FeatureGroups) -> ErmParams {
        let params = ErmParams::objective_perturbation(self.loss(), lambda, epsilon)
            .objective_calibration(self.calibration);
        if self.lever == Lever::GroupNoise {
            params.group_noise(groups.clone())
        } else {
            params
        }
    }
}

/// The ablation's configurations: the papers' two losses under both rules, the Huber widths
/// under the cliff-free rule, each encoding lever on logistic and Huber h = 0.5 (log counts
/// also on Huber h = 1, the rules' loss), and the
/// group-shaped noise on logistic and Huber h = 0.5 and 1.
pub fn ablation_variants() -> Vec<Variant> {
    use ObjectiveCalibration::{CliffFree, Cms11};
    let mut variants = vec![
        Variant::new(None, Cms11, Lever::Paper),
        Variant::new(None, CliffFree, Lever::Paper),
        Variant::new(Some(0.5), Cms11, Lever::Paper),
    ];
    for h in [0.1, 0.5, 1.0, 2.0] {
        variants.push(Variant::new(Some(h), CliffFree, Lever::Paper));
    }
    for lever in Lever::ENCODINGS {
        for &huber_width in lever.widths() {
            variants.push(Variant::new(huber_width, CliffFree, lever));
        }
    }
    for huber_width in [None, Some(0.5), Some(1.0)] {
        variants.push(Variant::new(huber_width, CliffFree, Lever::GroupNoise));
    }
    variants
}

/// Each row scaled to norm `√(1 − c²)` (from norm 1 after the papers' clipping, or its own
/// norm if smaller) with a constant `c` appended.
fn with_intercept(data: &Dataset, c: f64) -> Dataset {
    let column = data.features();
    let keep = (1.0 - c * c).sqrt();
    let rows = data
        .rows
        .iter()
        .map(|row| {
            let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
            let scale = keep / norm.max(1.0);
            let mut scaled: Vec<(usize, f64)> = row.iter().map(|&(j, v)| (j, v * scale)).collect();
            scaled.push((column, c));
            scaled
        })
        .collect();
    let mut feature_names = data.feature_names.clone();
    feature_names.push("intercept".into());
    Dataset {
        rows,
        feature_names,
        ..data.clone()
    }
}

/// The attribute a column belongs to: its name up to `=` (one-hot levels), else the name.
fn attribute(name: &str) -> &str {
    name.split_once('=').map_or(name, |(a, _)| a)
}

/// Rows divided by `√(number of attributes)`: after max-scaling each numeric column is at
/// most 1 and each one-hot attribute contributes one 1, so no row exceeds that norm.
fn divided_by_schema_bound(data: &Dataset) -> Dataset {
    let mut attributes: Vec<&str> = data.feature_names.iter().map(|n| attribute(n)).collect();
    attributes.dedup();
    let bound = (attributes.len() as f64).sqrt();
    let rows = data
        .rows
        .iter()
        .map(|row| row.iter().map(|&(j, v)| (j, v / bound)).collect())
        .collect();
    Dataset {
        rows,
        ..data.clone()
    }
}

/// Adult's public re-encoding (see [`Lever::PublicEncoding`]); `None` for other datasets.
fn public_encoding(data: &Dataset) -> Option<Dataset> {
    if data.name != "adult" {
        return None;
    }
    let mut feature_names: Vec<String> = Vec::new();
    let mut new_index: Vec<Option<usize>> = Vec::with_capacity(data.features());
    let mut other_country: Option<usize> = None;
    for name in &data.feature_names {
        let index = if attribute(name) == "education" {
            None
        } else if attribute(name) == "native-country" && name != "native-country=United-States" {
            Some(*other_country.get_or_insert_with(|| {
                feature_names.push("native-country=other".into());
                feature_names.len() - 1
            }))
        } else {
            feature_names.push(name.clone());
            Some(feature_names.len() - 1)
        };
        new_index.push(index);
    }
    let rows = data
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .filter_map(|&(j, v)| new_index[j].map(|k| (k, v)))
                .collect()
        })
        .collect();
    Some(Dataset {
        rows,
        feature_names,
        ..data.clone()
    })
}
