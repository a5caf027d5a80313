//! `dpml predict`, `dpml evaluate` and `dpml inspect`: a model applied to rows encoded by
//! the schema it was trained with (a different schema is refused by its hash).
//!
//! A linear model records the schema's hash in its metadata. A kernel model's metadata
//! names its feature map instead (dp-kernel binds the two), so for a kernel model the
//! schema is checked by the number of encoded features and, where the training report
//! (`MODEL.report.json`) lies beside the model, by the hash that report records.

use crate::text::say;
use std::io::Write;
use std::path::Path;

use dp_erm::Loss;
use dp_schema::{ColumnKind, Encoder, ReadOptions, Schema};

use crate::model_file::Model;
use crate::output::{Staged, check_free};
use crate::train::{report_paths, schema_tag};
use crate::{Failure, fail, progress};

/// Loads a model and refuses it unless it was trained with `schema`.
fn load_matching(model_path: &Path, schema: &Schema) -> Result<(Model, Encoder), Failure> {
    let model = Model::load(model_path)?;
    let expected = schema_tag(&schema.hash());
    match (&model, model.metadata().feature_map.as_deref()) {
        (Model::Kernel(_), _) => check_kernel_report(model_path, schema)?,
        (_, Some(tag)) if tag == expected => {}
        (_, Some(tag)) if tag.starts_with("dp-schema:sha256:") => {
            return Err(fail(format!(
                "{}: trained with the schema of hash {}, but this schema's hash is {}; use the \
                 schema the model was trained with",
                model_path.display(),
                crate::text::prefix(tag.strip_prefix("dp-schema:sha256:").unwrap_or(tag), 64),
                schema.hash()
            )));
        }
        _ => {
            return Err(fail(format!(
                "{}: not trained from a dpml schema (no schema hash in its metadata)",
                model_path.display()
            )));
        }
    }
    let encoder = Encoder::new(schema);
    if model.input_features() != encoder.features() {
        return Err(fail(format!(
            "{}: takes rows of {} features, but the schema encodes {} features; use the \
             schema the model was trained with",
            model_path.display(),
            model.input_features(),
            encoder.features()
        )));
    }
    Ok((model, encoder))
}

/// A kernel model's schema check beyond its dimension: the hash its training report
/// records, where that report lies beside it.
fn check_kernel_report(model_path: &Path, schema: &Schema) -> Result<(), Failure> {
    let (report, _) = report_paths(model_path);
    // A report that cannot be read (absent, or not a report) leaves the dimension check.
    let Ok(text) =
        crate::input::read_text_bounded(&report, crate::input::MAX_REPORT_BYTES, "a dpml report")
    else {
        return Ok(());
    };
    let recorded = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|r| r["schema"]["sha256"].as_str().map(str::to_owned));
    match recorded {
        Some(hash) if hash != schema.hash() => Err(fail(format!(
            "{}: its report {} says it was trained with the schema of hash {hash}, but this \
             schema's hash is {}; use the schema the model was trained with",
            model_path.display(),
            report.display(),
            schema.hash()
        ))),
        _ => Ok(()),
    }
}

/// Names for predictions: the positive class, and the other class if there is one other.
fn class_names(schema: &Schema) -> (String, String) {
    match &schema.columns[schema.label_index()].kind {
        ColumnKind::Label {
            classes, positive, ..
        } => {
            let others: Vec<&String> = classes.iter().filter(|c| *c != positive).collect();
            let negative = match others.as_slice() {
                [one] => (*one).clone(),
                _ => format!("not {positive}"),
            };
            (positive.clone(), negative)
        }
        _ => unreachable!("label_index names the label column"),
    }
}

fn load_schema(path: &Path) -> Result<Schema, Failure> {
    Schema::load(path).map_err(|e| fail(e.to_string()))
}

/// `dpml predict`: one line per data row, in order.
pub fn predict(
    model_path: &Path,
    schema_path: &Path,
    data: &Path,
    out: &Path,
    proba: bool,
    force: bool,
) -> Result<(), Failure> {
    check_free(out, force)?;
    let schema = load_schema(schema_path)?;
    let (model, encoder) = load_matching(model_path, &schema)?;
    if let Model::Regression(_) = &model {
        if proba {
            return Err(fail(format!(
                "--proba: {} is a regressor, which gives no probabilities",
                model_path.display()
            )));
        }
        return predict_targets(&model, &schema, &encoder, data, out, force);
    }
    if proba && model.metadata().loss != Loss::Logistic {
        return Err(fail(format!(
            "--proba: {} is a {} model, which gives no probabilities (train with --model \
             logistic)",
            model_path.display(),
            model.metadata().loss.name()
        )));
    }
    let (positive, negative) = class_names(&schema);
    let mut staged = Staged::create(out, force)?;
    staged.write(if proba {
        b"prediction,probability\n"
    } else {
        b"prediction\n"
    })?;
    let d = encoder.features();
    let file = data.display().to_string();
    let bar = progress::reading(&file);
    let out_name = out.display().to_string();
    let options = ReadOptions {
        labels: false,
        batch_rows: dp_schema::DEFAULT_BATCH_ROWS,
    };
    let summary = dp_schema::read_batches::<Failure>(
        data,
        &schema,
        &encoder,
        options,
        &mut progress::updater(&bar),
        &mut |batch| {
            let w = staged.writer();
            for score in model.scores(d, batch.rows)? {
                let class = if score >= 0.0 { &positive } else { &negative };
                let line = if proba {
                    writeln!(
                        w,
                        "{},{}",
                        csv_field(class),
                        dp_erm::logistic_probability(score)
                    )
                } else {
                    writeln!(w, "{}", csv_field(class))
                };
                line.map_err(|e| fail(format!("{out_name}: cannot write it: {e}")))?;
            }
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    staged.commit()?;
    eprintln!("wrote {} ({} predictions)", out.display(), summary.rows);
    Ok(())
}

/// `dpml predict` for a regressor: one number per data row, in the target's units and
/// within its public bounds.
fn predict_targets(
    model: &Model,
    schema: &Schema,
    encoder: &Encoder,
    data: &Path,
    out: &Path,
    force: bool,
) -> Result<(), Failure> {
    let mut staged = Staged::create(out, force)?;
    staged.write(b"prediction\n")?;
    let d = encoder.features();
    let bar = progress::reading(&data.display().to_string());
    let out_name = out.display().to_string();
    let options = ReadOptions {
        labels: false,
        batch_rows: dp_schema::DEFAULT_BATCH_ROWS,
    };
    let summary = dp_schema::read_batches::<Failure>(
        data,
        schema,
        encoder,
        options,
        &mut progress::updater(&bar),
        &mut |batch| {
            let w = staged.writer();
            for prediction in model.scores(d, batch.rows)? {
                writeln!(w, "{prediction}")
                    .map_err(|e| fail(format!("{out_name}: cannot write it: {e}")))?;
            }
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    staged.commit()?;
    eprintln!("wrote {} ({} predictions)", out.display(), summary.rows);
    Ok(())
}

/// A CSV field, quoted if it needs to be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// `dpml evaluate`: error and confusion matrix on the user's own labelled data.
pub fn evaluate(
    model_path: &Path,
    schema_path: &Path,
    data: &Path,
    json: bool,
) -> Result<(), Failure> {
    let schema = load_schema(schema_path)?;
    let (model, encoder) = load_matching(model_path, &schema)?;
    if let Model::Regression(_) = &model {
        return evaluate_targets(&model, &schema, &encoder, data, json);
    }
    let d = encoder.features();
    let bar = progress::reading(&data.display().to_string());
    // [true positive, false negative, false positive, true negative]
    let mut counts = [0u64; 4];
    let options = ReadOptions {
        labels: true,
        batch_rows: dp_schema::DEFAULT_BATCH_ROWS,
    };
    dp_schema::read_batches::<Failure>(
        data,
        &schema,
        &encoder,
        options,
        &mut progress::updater(&bar),
        &mut |batch| {
            let labels = batch.labels.unwrap_or_default();
            for (score, y) in model.scores(d, batch.rows)?.into_iter().zip(labels) {
                let predicted_positive = score >= 0.0;
                let index = match (y > 0.0, predicted_positive) {
                    (true, true) => 0,
                    (true, false) => 1,
                    (false, true) => 2,
                    (false, false) => 3,
                };
                counts[index] += 1;
            }
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    let [tp, fn_, fp, tn] = counts;
    let n = tp + fn_ + fp + tn;
    let error = (fn_ + fp) as f64 / n as f64;
    let (positive, negative) = class_names(&schema);
    let notice = "NOT PRIVATE: computed on your own labelled data, for you; these numbers are \
                  not differentially private and must not be released as if they were";
    if json {
        let report = serde_json::json!({
            "notice": notice,
            "data_file": data.display().to_string(),
            "rows": n,
            "error": error,
            "confusion": {
                "positive_class": positive,
                "true_positive": tp, "false_negative": fn_,
                "false_positive": fp, "true_negative": tn,
            },
        });
        say!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        say!("{notice}.");
        say!("rows: {n}");
        say!("error: {error:.4}");
        say!("confusion matrix (rows: true class, columns: predicted):");
        say!("  {:>14} {:>14} {:>14}", "", positive, negative);
        say!("  {:>14} {:>14} {:>14}", positive, tp, fn_);
        say!("  {:>14} {:>14} {:>14}", negative, fp, tn);
    }
    Ok(())
}

/// `dpml evaluate` for a regressor: RMSE, MAE and R² (against the evaluated rows' own
/// mean) on the user's own data.
fn evaluate_targets(
    model: &Model,
    schema: &Schema,
    encoder: &Encoder,
    data: &Path,
    json: bool,
) -> Result<(), Failure> {
    let d = encoder.features();
    let bar = progress::reading(&data.display().to_string());
    let (mut n, mut squared, mut absolute) = (0u64, 0.0f64, 0.0f64);
    let mut targets = Vec::new();
    let options = ReadOptions {
        labels: true,
        batch_rows: dp_schema::DEFAULT_BATCH_ROWS,
    };
    dp_schema::read_batches::<Failure>(
        data,
        schema,
        encoder,
        options,
        &mut progress::updater(&bar),
        &mut |batch| {
            let labels = batch.labels.unwrap_or_default();
            for (prediction, y) in model.scores(d, batch.rows)?.into_iter().zip(labels) {
                let residual = prediction - y;
                squared += residual * residual;
                absolute += residual.abs();
                targets.push(y);
                n += 1;
            }
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    let rows = n.max(1) as f64;
    let mean = targets.iter().sum::<f64>() / rows;
    let total: f64 = targets.iter().map(|y| (y - mean) * (y - mean)).sum();
    let rmse = (squared / rows).sqrt();
    let mae = absolute / rows;
    let r2 = if total > 0.0 {
        1.0 - squared / total
    } else {
        f64::NAN
    };
    let notice = "NOT PRIVATE: computed on your own data, for you; these numbers are not \
                  differentially private and must not be released as if they were";
    if json {
        let report = serde_json::json!({
            "notice": notice,
            "data_file": data.display().to_string(),
            "rows": n,
            "rmse": rmse,
            "mae": mae,
            "r2": r2,
        });
        say!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        say!("{notice}.");
        say!("rows: {n}");
        say!("rmse: {rmse:.6}");
        say!("mae:  {mae:.6}");
        say!("r2:   {r2:.4} (1 − squared error over the rows' variance about their mean)");
    }
    Ok(())
}

/// `dpml inspect`: the model's metadata (and its weights by feature name with `--schema`).
pub fn inspect(model_path: &Path, schema_path: Option<&Path>) -> Result<(), Failure> {
    let model = Model::load(model_path)?;
    let meta = model.metadata();
    say!("model:          {}", model_path.display());
    if let Model::Kernel(k) = &model {
        let map = k.map();
        say!(
            "kind:           kernel ({:?}, {:?} sampling, {} random features of {} inputs)",
            map.kernel(),
            map.sampling(),
            map.output_features(),
            map.input_features()
        );
    } else if let Model::Regression(r) = &model {
        let bounds = r.target_scale();
        say!(
            "kind:           linear regression (predictions within the public target bounds \
             [{}, {}])",
            crate::text::number(bounds.lower()),
            crate::text::number(bounds.upper())
        );
    } else {
        say!("kind:           linear");
    }
    say!("mechanism:      {:?}", meta.mechanism);
    match model.epsilon() {
        Some(e) => {
            say!(
                "epsilon:        {} (the file's claim: a plain file is not authenticated)",
                crate::text::number(e)
            )
        }
        None => say!("epsilon:        none — NOT PRIVATE"),
    }
    if meta.mechanism.delta() > 0.0 {
        say!(
            "delta:          {:e} (an (epsilon, delta) guarantee; the file's claim)",
            meta.mechanism.delta()
        );
    }
    say!("loss:           {}", meta.loss.name());
    if let dp_erm::Mechanism::AdaSsp { .. } = meta.mechanism {
        say!(
            "method:         AdaSSP (Wang 2018): ridge regression on noisy sufficient \
             statistics; least squares, recorded as Huber regression with h = 2 (the scaled \
             target's range) and Λ = λ/(2n)"
        );
    }
    say!(
        "regularization: {}",
        crate::text::number(meta.regularization)
    );
    say!("features:       {}", meta.features);
    match meta.noise_groups {
        Some(g) => say!("noise:          shaped to {g} feature groups"),
        None => say!("noise:          Euclidean (or none)"),
    }
    match (&model, meta.feature_map.as_deref()) {
        (Model::Kernel(_), Some(map)) => {
            say!("feature map:    {map} (the schema's hash is in the training report)")
        }
        (_, Some(tag)) if tag.starts_with("dp-schema:sha256:") => {
            say!(
                "schema sha256:  {}",
                tag.strip_prefix("dp-schema:sha256:").unwrap_or(tag)
            )
        }
        _ => say!("schema:         none recorded"),
    }
    say!("trained by:     dp-erm {}", meta.crate_version);
    if let Some(path) = schema_path {
        let schema = load_schema(path)?;
        let (model, encoder) = load_matching(model_path, &schema)?;
        match &model {
            Model::Linear(_) | Model::Regression(_) => {
                say!("weights (on the encoded features; a regressor's on the scaled target):");
                let weights = match &model {
                    Model::Regression(r) => r.weights(),
                    Model::Linear(m) => m.weights(),
                    Model::Kernel(_) => &[],
                };
                for (name, w) in encoder.feature_names().iter().zip(weights) {
                    say!("  {name:<40} {:>12}", crate::text::compact(*w, 6));
                }
            }
            Model::Kernel(_) => say!(
                "weights:        on random features, not on the schema's features (none to \
                 name); the schema matches the model's {} inputs",
                encoder.features()
            ),
        }
    }
    Ok(())
}
