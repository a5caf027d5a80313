//! The command line and the Rust API release the same schema from the same seed.

use std::collections::BTreeMap;

use dp_noise::InsecureSeededRng;
use dp_schema::{CsvFormat, DescribeColumn, DescribeKind, DescribePlan, DescribeSpec};

use super::*;

#[test]
fn the_command_line_and_the_api_release_the_same_schema() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.csv");
    let mut text = String::from("x,c,y\n");
    for i in 0..2000 {
        text += &format!(
            "{},{},{}\n",
            i % 90,
            ["u", "v", "w"][i % 3],
            ["p", "n"][i % 2]
        );
    }
    std::fs::write(&data, text).unwrap();
    let out = dir.path().join("s.toml");
    let request = PrivateRequest {
        data: data.clone(),
        out: out.clone(),
        epsilon: 1.0,
        delta: 1e-6,
        ledger: None,
        label: Some("y".into()),
        positive: Some("p".into()),
        classes: None,
        categorical: vec!["c".into()],
        ignore: vec![],
        levels: vec![],
        aliases: vec![],
        columns: None,
        missing: vec![],
        comment: None,
        delimiter: ',',
        row_scaling: dp_schema::RowScaling::UnitNorm,
        numeric_missing_zero: false,
    };
    run_private_with(request, InsecureSeededRng::new(11)).unwrap();
    let written = std::fs::read_to_string(&out).unwrap();

    let spec = DescribeSpec::new(
        vec![
            DescribeColumn {
                name: "x".into(),
                kind: DescribeKind::Numeric {
                    missing: dp_schema::NumericMissing::Error,
                },
            },
            DescribeColumn {
                name: "c".into(),
                kind: DescribeKind::Categorical { candidates: None },
            },
            DescribeColumn {
                name: "y".into(),
                kind: DescribeKind::Label {
                    positive: "p".into(),
                    classes: None,
                    aliases: BTreeMap::new(),
                },
            },
        ],
        CsvFormat {
            header: true,
            delimiter: ',',
            comment: None,
            trim: true,
            missing: vec![],
        },
        1.0,
        1e-6,
    );
    let plan = DescribePlan::new(spec).unwrap();
    let api = dp_schema::describe_file(&data, &plan, &mut |_, _| {})
        .unwrap()
        .release(&mut InsecureSeededRng::new(11))
        .unwrap();
    assert_eq!(written, api.text);
}
