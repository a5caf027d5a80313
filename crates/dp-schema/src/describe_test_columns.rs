//! The spec the describe tests share: `age` (numeric), `colour` (categorical), `note`
//! (ignored) and the label `y` (positive "yes", the alias "yes." for it), read as CSV with a
//! header and "?" missing.

use std::collections::BTreeMap;

use super::{DescribeColumn, DescribeKind};
use crate::{CsvFormat, NumericMissing};

pub(crate) fn csv_format() -> CsvFormat {
    CsvFormat {
        header: true,
        delimiter: ',',
        comment: None,
        trim: true,
        missing: vec!["?".into()],
    }
}

/// The four columns; `candidates` for colour and `classes` for y are public lists where
/// given (else released).
pub(crate) fn columns(
    missing: NumericMissing,
    candidates: Option<Vec<String>>,
    classes: Option<Vec<String>>,
) -> Vec<DescribeColumn> {
    vec![
        DescribeColumn {
            name: "age".into(),
            kind: DescribeKind::Numeric { missing },
        },
        DescribeColumn {
            name: "colour".into(),
            kind: DescribeKind::Categorical { candidates },
        },
        DescribeColumn {
            name: "note".into(),
            kind: DescribeKind::Ignore,
        },
        DescribeColumn {
            name: "y".into(),
            kind: DescribeKind::Label {
                positive: "yes".into(),
                classes,
                aliases: BTreeMap::from([("yes.".to_owned(), "yes".to_owned())]),
            },
        },
    ]
}
