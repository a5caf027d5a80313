//! `dpml`: train, apply and inspect differentially private classifiers from CSV or Parquet
//! files described by a public schema (see `schemas/adult.toml`).

#![forbid(unsafe_code)]

mod apply;
mod cleanup;
mod describe_args;
mod grid;
mod input;
mod ledger_cmd;
mod model_file;
mod output;
mod progress;
mod report;
mod schema_init;
mod text;
mod train;
mod tune;
mod tune_regression;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dp_fit::recipe::{KernelName, SamplingName};

/// A command's failure: one message for standard error.
#[derive(Debug)]
pub struct Failure(String);

impl From<dp_tune::TuneError> for Failure {
    fn from(e: dp_tune::TuneError) -> Self {
        Failure(format!("the tuning was refused: {e}"))
    }
}

impl From<dp_schema::ReadError> for Failure {
    fn from(e: dp_schema::ReadError) -> Self {
        Failure(e.to_string())
    }
}

/// A failure with `message`.
pub fn fail(message: impl Into<String>) -> Failure {
    Failure(message.into())
}

#[derive(Parser)]
#[command(
    name = "dpml",
    version,
    about = "Differentially private classifiers from CSV or Parquet files with a public schema",
    after_help = "Example (UCI Adult, with the committed schema):\n  \
        dpml ledger init adult-ledger.json --total-epsilon 2 --dataset adult\n  \
        dpml train --data adult.data --schema schemas/adult.toml --epsilon 1 \\\n    \
        --ledger adult-ledger.json --out adult.dpm\n  \
        dpml predict --model adult.dpm --schema schemas/adult.toml --data adult.test --out pred.csv\n  \
        dpml evaluate --model adult.dpm --schema schemas/adult.toml --data adult.test"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One value, parsed once per run: the size of its largest variant (train's options) costs
// nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Write a schema skeleton.
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Train an ε-differentially private classifier (objective perturbation).
    #[command(
        after_help = "Examples:\n  dpml train --data adult.data --schema schemas/adult.toml \
        --epsilon 1 --out adult.dpm\n  dpml train --data adult.data --schema \
        schemas/adult.toml --epsilon 1 --tune log:1e-6..1e-2:5 --out adult.dpm\n  dpml train \
        --data adult.data.gz --schema schemas/adult.toml --epsilon 1 --model kernel --out \
        adult-kernel.dpm\n\nWrites the model and a report beside it (adult.report.json, \
        adult.report.md) holding only public or privatized facts. With --ledger, the run is \
        refused before any data is read if its ε (and δ) does not fit in what the ledger has \
        left.\n\n--tune GRID chooses Λ privately among the grid's values (dp-tune), and the \
        whole run, selection included, spends --epsilon:\n  1e-4,1e-3,1e-2      the values \
        listed (2 to 64 distinct Λ)\n  log:1e-6..1e-2:5    5 values evenly spaced in log \
        scale from 1e-6 to 1e-2\n--tune-method split (default) trains each candidate on its \
        own part of the data and picks one with the exponential mechanism: pure ε. \
        --tune-method stopping (random stopping, Liu-Talwar) trains every candidate on 90% of \
        the rows but spends a δ ≤ 1e-6 as well, which a pure-ε ledger refuses.\n\n--model \
        kernel trains a Gaussian-kernel SVM through random Fourier features (dp-kernel) with \
        public defaults: --gamma 1, --random-features 200, --kernel gaussian with orthogonal \
        features (standard for laplacian); rows are the schema's encoding (in the unit ball), \
        the map is drawn before the data are read, and the noise is Euclidean.\n\n--out-of-core \
        trains --model huber/logistic (pure ε, Euclidean noise) on a file larger than \
        memory: the file is read once into a row cache in --cache-dir (default: the folder of \
        --out), every Newton pass reads the cache block by block, and the cache is deleted \
        when the command ends:\n  dpml train --data claims.parquet --schema claims.toml \
        --epsilon 1 --model logistic --out-of-core --out claims.dpm\n\n--delta δ > 0 \
        trades pure ε for (ε, δ): --model huber/logistic then use Gaussian objective \
        perturbation (dp-erm GaussianErm; Euclidean noise). --model dp-sgd trains logistic \
        regression (Huber regression on a schema with a target column) by DP-SGD (Poisson batches, clipped gradients, Gaussian noise, RDP \
        accounting; σ calibrated to (ε, δ)) and needs --delta:\n  dpml train --data \
        adult.data --schema schemas/adult.toml --epsilon 1 --delta 1e-6 --model dp-sgd \
        --batch-size 256 --epochs 10 --out adult-sgd.dpm\nEvery guarantee is for datasets \
        that differ in one row replaced (same n). A ledger with total δ = 0 refuses δ > 0."
    )]
    Train {
        /// The training data: CSV (gzip-compressed if its name ends in .gz or it starts with
        /// gzip's magic bytes), or Parquet for a .parquet/.pq name.
        #[arg(long)]
        data: PathBuf,
        /// The public schema (TOML).
        #[arg(long, required_unless_present = "private_schema")]
        schema: Option<PathBuf>,
        /// No schema yet: describe the data privately first (bounds, levels and classes
        /// released as `dpml schema init --private` does, from the flags under "Private
        /// description"), write that schema here (never replacing a file), then train with
        /// it on the same file. --epsilon is the total: the description spends
        /// --describe-share of it, the fit the rest, two spends on --ledger.
        #[arg(long, value_name = "SCHEMA.toml", conflicts_with = "schema", requires_all = ["label", "positive"])]
        private_schema: Option<PathBuf>,
        /// --private-schema: the share of --epsilon the description spends [default: 0.4,
        /// dp-schema's DESCRIBE_SHARE].
        #[arg(long, requires = "private_schema")]
        describe_share: Option<f64>,
        /// --private-schema: the description's δ, needed by levels or classes without a
        /// public list (charged on top of the fit's --delta).
        #[arg(long, default_value_t = 0.0)]
        describe_delta: f64,
        /// --private-schema: the CSV field separator.
        #[arg(long, default_value = ",")]
        delimiter: char,
        /// What is public about the columns, for --private-schema.
        #[command(flatten, next_help_heading = "Private description (--private-schema)")]
        describe: describe_args::DescribeArgs,
        /// The privacy parameter ε of the released model.
        #[arg(long)]
        epsilon: f64,
        /// The δ of an (ε, δ) guarantee: 0 (default) is pure ε; > 0 selects the Gaussian
        /// mechanisms (huber, logistic: Gaussian objective perturbation) and is required by
        /// --model dp-sgd.
        #[arg(long, default_value_t = 0.0)]
        delta: f64,
        /// The model (and loss).
        #[arg(long, value_enum, default_value = "huber")]
        model: train::Model,
        /// The mechanism: objective perturbation; output perturbation (Euclidean noise; with
        /// --delta its Gaussian form, which --tune-method stopping accepts); or (--task
        /// regression with --delta > 0) AdaSSP, ridge regression on noisy sufficient
        /// statistics (Wang 2018).
        #[arg(long, value_enum, default_value = "objective")]
        mechanism: train::MechanismChoice,
        /// Classification or regression: the schema decides (a `type = "target"` column
        /// with public lower and upper makes a regression: Huber regression by objective
        /// perturbation, or by DP-SGD with --model dp-sgd, predictions within the bounds);
        /// given, it must agree.
        #[arg(long, value_enum)]
        task: Option<train::Task>,
        /// --model dp-sgd: the expected Poisson batch size (q = batch/n) [default: 256].
        #[arg(long)]
        batch_size: Option<usize>,
        /// --model dp-sgd: passes over the data (T = ⌈epochs·n/batch⌉ steps) [default: 10].
        #[arg(long)]
        epochs: Option<f64>,
        /// --model dp-sgd: the learning rate η [default: 1].
        #[arg(long)]
        learning_rate: Option<f64>,
        /// --model dp-sgd: the clipping norm C of one row's gradient [default: 1].
        #[arg(long)]
        clip_norm: Option<f64>,
        /// --model dp-sgd: take the batch size, epochs, learning rate and clipping norm from
        /// the library's data-independent DP-SGD rule at ε (fitted on synthetic data of
        /// about 30,000 rows: C = 0.25, 200 epochs, averaged iterates) instead of the four
        /// options above.
        #[arg(long)]
        sgd_rule: bool,
        /// --model dp-sgd: the neighbouring datasets the guarantee is for: one row replaced
        /// (the library's relation) or one row added or removed (Opacus' relation; needs
        /// --public-rows, since the row count is then private).
        #[arg(long, default_value = "replace-one", value_parser = neighbouring())]
        neighbouring: dp_fit::spec::Neighbouring,
        /// --neighbouring add-remove: a public estimate n̂ of the number of rows (never read
        /// from the file): it sets q = batch/n̂, the steps and the divisor of each step.
        #[arg(long)]
        public_rows: Option<usize>,
        /// --model dp-sgd: the accountant that calibrates σ and certifies the model: pld
        /// (privacy-loss distribution, tight; the default) or rdp (Rényi DP, as before).
        #[arg(long, value_parser = accountant())]
        accountant: Option<dp_fit::spec::Accountant>,
        /// Λ, or "auto" for the library's data-independent rule (from n, d and ε).
        #[arg(long, default_value = "auto", value_parser = parse_regularization)]
        regularization: Regularization,
        /// The shape of the noise [default: grouped; euclidean for --model kernel].
        #[arg(long, value_enum)]
        noise: Option<train::Noise>,
        /// Choose Λ privately among GRID: "1e-4,1e-3,1e-2" or "log:LOW..HIGH:COUNT".
        #[arg(long, value_name = "GRID")]
        tune: Option<String>,
        /// How --tune selects: split (pure ε, or the candidates' δ with --delta) or stopping
        /// (ε and a δ ≤ 1e-6; with --delta and --mechanism output, (ε, δ) by Rényi DP).
        #[arg(long, value_enum, default_value = "split", requires = "tune")]
        tune_method: train::TuneMethod,
        /// Random stopping's probability of stopping after each run (expected runs 1/γ).
        #[arg(long, value_name = "GAMMA", requires = "tune")]
        tune_stop_probability: Option<f64>,
        /// The kernel of --model kernel [default: gaussian].
        #[arg(long, value_parser = names::<KernelName>(KernelName::NAMES))]
        kernel: Option<KernelName>,
        /// The kernel width γ of --model kernel (public; rows are in the unit ball) [default: 1].
        #[arg(long)]
        gamma: Option<f64>,
        /// The number D of random features of --model kernel [default: 200].
        #[arg(long, value_name = "D")]
        random_features: Option<usize>,
        /// How --model kernel draws frequencies [default: orthogonal for gaussian, standard
        /// for laplacian].
        #[arg(long, value_parser = names::<SamplingName>(SamplingName::NAMES))]
        sampling: Option<SamplingName>,
        /// Train without holding the rows in memory, for files larger than it: the file is
        /// read once and encoded into a row cache (a hidden file in --cache-dir, deleted
        /// when the command ends), which every Newton pass then reads block by block.
        /// Linear models (huber, logistic) with pure ε; the noise is then Euclidean.
        #[arg(long)]
        out_of_core: bool,
        /// --out-of-core: rows per block of the row cache; memory holds a few blocks
        /// (about 3 MB each for Adult-shaped rows at the default) [default: 16384].
        #[arg(long, value_name = "ROWS")]
        block_rows: Option<usize>,
        /// --out-of-core: the folder for the row cache, which takes about 12 bytes per
        /// stored entry and per row [default: the folder of --out].
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
        /// A ledger (dpml ledger init) to charge ε to.
        #[arg(long)]
        ledger: Option<PathBuf>,
        /// The model file to write.
        #[arg(long)]
        out: PathBuf,
        /// Replace existing outputs.
        #[arg(long)]
        force: bool,
    },
    /// Predict the class of every row of a file (post-processing: no privacy spent).
    #[command(
        after_help = "Example:\n  dpml predict --model adult.dpm --schema schemas/adult.toml \
        --data adult.test --out predictions.csv\n\nThe file may leave out the label column. \
        The schema must be the one the model was trained with (checked by its hash)."
    )]
    Predict {
        /// The model (dpml train).
        #[arg(long)]
        model: PathBuf,
        /// The schema the model was trained with.
        #[arg(long)]
        schema: PathBuf,
        /// The rows to predict.
        #[arg(long)]
        data: PathBuf,
        /// Add the probability of the positive class (logistic models).
        #[arg(long)]
        proba: bool,
        /// The predictions file (CSV) to write.
        #[arg(long)]
        out: PathBuf,
        /// Replace an existing output.
        #[arg(long)]
        force: bool,
    },
    /// Error and confusion matrix on your own labelled data (NOT private: for you only).
    #[command(
        after_help = "Example:\n  dpml evaluate --model adult.dpm --schema schemas/adult.toml \
        --data adult.test"
    )]
    Evaluate {
        /// The model (dpml train).
        #[arg(long)]
        model: PathBuf,
        /// The schema the model was trained with.
        #[arg(long)]
        schema: PathBuf,
        /// Labelled rows held out from training.
        #[arg(long)]
        data: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a model's metadata (and its weights by feature name, given its schema).
    #[command(after_help = "Example:\n  dpml inspect adult.dpm --schema schemas/adult.toml")]
    Inspect {
        /// The model file.
        model: PathBuf,
        /// The schema it was trained with (to name the weights).
        #[arg(long)]
        schema: Option<PathBuf>,
    },
    /// Create or show a privacy ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// A skeleton from a file's column names only (no data row is read).
    #[command(
        after_help = "Example:\n  dpml schema init data.csv --out schema.toml\n\nEvery \
        column is left as type = \"FILL_IN\": bounds, levels and classes must be public \
        (documentation, domain knowledge), never read off the data.\n\nWith --private, the \
        data are read once and the bounds, levels and classes are differentially private \
        releases, each annotated in the schema with its mechanism and spend, charged to \
        --ledger like a fit (UCI Adult, only names, types and the positive class public):\n  \
        dpml schema init --private --epsilon 0.5 --delta 1e-6 --ledger adult-ledger.json \\\n    \
        adult.data --out adult-private.toml --columns age,workclass,...,income \\\n    \
        --categorical workclass,education,... --label income --positive '>50K' \\\n    \
        --alias '>50K.,>50K' --missing '?' --comment '|'\n  dpml train --data adult.data \
        --schema adult-private.toml --epsilon 0.5 --ledger adult-ledger.json --out adult.dpm\n\
        \nSplitting a total ε: 40% to the description, the rest to the fit (dp-schema's \
        DESCRIBE_SHARE = 0.4, a data-independent rule fitted on synthetic data; dpml train \
        --private-schema does both in one run). ε is split equally \
        among the facts released; δ (needed by levels or classes without a public list: \
        --levels COLUMN=L1,L2,… and --classes make them pure ε) equally among those releases."
    )]
    Init {
        /// The data file (CSV with a header, or Parquet).
        data: PathBuf,
        /// Where to write the skeleton (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The CSV field separator.
        #[arg(long, default_value = ",")]
        delimiter: char,
        /// Replace an existing output (never with --private).
        #[arg(long, conflicts_with = "private")]
        force: bool,
        /// Read the data and write a schema whose bounds, levels and classes are private
        /// releases (each annotated with its mechanism and spend), charged to --ledger.
        #[arg(long, requires_all = ["epsilon", "label", "positive", "out"])]
        private: bool,
        /// --private: the ε of the whole description, split equally among its facts.
        #[arg(long, requires = "private")]
        epsilon: Option<f64>,
        /// --private: the δ of the description, shared by the releases of levels without a
        /// public list (needed by them; 0 refuses them).
        #[arg(long, default_value_t = 0.0, requires = "private")]
        delta: f64,
        /// --private: a ledger (dpml ledger init) to charge the description to.
        #[arg(long, requires = "private")]
        ledger: Option<PathBuf>,
        /// --private: what is public about the columns.
        #[command(flatten)]
        describe: describe_args::DescribeArgs,
    },
}

#[derive(Subcommand)]
enum LedgerCommand {
    /// A new ledger with a dataset's total ε and nothing spent.
    #[command(
        after_help = "Example:\n  dpml ledger init adult-ledger.json --total-epsilon 2 \
        --dataset adult"
    )]
    Init {
        /// The ledger file to create.
        ledger: PathBuf,
        /// The dataset's total ε.
        #[arg(long)]
        total_epsilon: f64,
        /// What the budget is for.
        #[arg(long, default_value = "")]
        dataset: String,
        /// The dataset's total δ; 0 (the default) makes a pure-ε ledger, which refuses any
        /// run that spends a δ (--tune-method stopping).
        #[arg(long, default_value_t = 0.0)]
        total_delta: f64,
    },
    /// What a ledger has spent and has left.
    #[command(after_help = "Example:\n  dpml ledger show adult-ledger.json")]
    Show {
        /// The ledger file.
        ledger: PathBuf,
    },
    /// Checks that the ledger still holds the spend of every model given (by its report):
    /// a model whose spend is missing shows a ledger edited or restored from an older copy.
    #[command(after_help = "Example:\n  dpml ledger check adult-ledger.json adult.dpm tuned.dpm")]
    Check {
        /// The ledger file.
        ledger: PathBuf,
        /// Models trained with --ledger (their MODEL.report.json is read).
        #[arg(required = true)]
        models: Vec<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Regularization {
    Auto,
    Fixed(f64),
}

fn parse_regularization(text: &str) -> Result<Regularization, String> {
    if text == "auto" {
        return Ok(Regularization::Auto);
    }
    text.parse::<f64>()
        .map(Regularization::Fixed)
        .map_err(|_| format!("{text:?} is neither \"auto\" nor a number"))
}

/// `dpml train`'s arguments as the request `train::run` takes.
fn train_request(
    command: Command,
) -> Result<(train::TrainRequest, Option<describe_args::Described>), Failure> {
    let Command::Train {
        data,
        schema,
        private_schema,
        describe_share,
        describe_delta,
        delimiter,
        describe,
        epsilon,
        delta,
        model,
        mechanism,
        task,
        batch_size,
        epochs,
        learning_rate,
        clip_norm,
        sgd_rule,
        neighbouring,
        public_rows,
        accountant,
        regularization,
        noise,
        tune,
        tune_method,
        tune_stop_probability,
        kernel,
        gamma,
        random_features,
        sampling,
        out_of_core,
        block_rows,
        cache_dir,
        ledger,
        out,
        force,
    } = command
    else {
        unreachable!("train_request is called with `dpml train`'s arguments only")
    };
    let described = match private_schema {
        Some(schema_out) => Some(describe_args::Described {
            schema_out,
            share: describe_share,
            delta: describe_delta,
            delimiter,
            args: describe,
        }),
        None => {
            describe.refuse_without("--private-schema")?;
            if describe_delta != 0.0 || delimiter != ',' {
                return Err(fail(
                    "--describe-delta and --delimiter describe the data privately: they \
                     need --private-schema",
                ));
            }
            None
        }
    };
    let request = train::TrainRequest {
        data,
        // The description writes it before the fit reads it.
        schema: schema.unwrap_or_else(|| described_schema(&described)),
        epsilon,
        delta,
        model,
        mechanism,
        task,
        sgd: train::SgdRequest {
            batch_size,
            epochs,
            learning_rate,
            clip_norm,
            rule: sgd_rule,
            neighbouring,
            public_rows,
            accountant,
        },
        regularization: match regularization {
            Regularization::Auto => None,
            Regularization::Fixed(l) => Some(l),
        },
        noise,
        tune,
        tune_method,
        stop_probability: tune_stop_probability,
        kernel: train::KernelRequest {
            kind: kernel,
            gamma,
            features: random_features,
            sampling,
        },
        out_of_core: train::OutOfCoreRequest {
            on: out_of_core,
            block_rows,
            cache_dir,
        },
        ledger,
        out,
        force,
        described: None,
    };
    Ok((request, described))
}

/// The schema a `--private-schema` run trains with: the one its description writes.
fn described_schema(described: &Option<describe_args::Described>) -> PathBuf {
    described
        .as_ref()
        .map(|d| d.schema_out.clone())
        .expect("clap requires --schema or --private-schema")
}

/// `dpml schema init --private`'s request.
fn private_request(command: SchemaCommand) -> schema_init::PrivateRequest {
    let SchemaCommand::Init {
        data,
        out,
        delimiter,
        epsilon,
        delta,
        ledger,
        describe,
        ..
    } = command;
    describe.request(
        data,
        out.expect("--private requires --out"),
        (epsilon.expect("--private requires --epsilon"), delta),
        ledger,
        delimiter,
    )
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Schema(init @ SchemaCommand::Init { private: true, .. }) => {
            schema_init::run_private(private_request(init)).map(|_| ())
        }
        Command::Schema(SchemaCommand::Init {
            data,
            out,
            delimiter,
            force,
            describe,
            ..
        }) => {
            describe.refuse_without("--private")?;
            schema_init::run(&data, out.as_deref(), delimiter, force)
        }
        train @ Command::Train { .. } => match train_request(train)? {
            (request, Some(described)) => describe_args::describe_then_train(described, request),
            (request, None) => train::run(request),
        },
        Command::Predict {
            model,
            schema,
            data,
            proba,
            out,
            force,
        } => apply::predict(&model, &schema, &data, &out, proba, force),
        Command::Evaluate {
            model,
            schema,
            data,
            json,
        } => apply::evaluate(&model, &schema, &data, json),
        Command::Inspect { model, schema } => apply::inspect(&model, schema.as_deref()),
        Command::Ledger(LedgerCommand::Init {
            ledger,
            total_epsilon,
            dataset,
            total_delta,
        }) => ledger_cmd::init(&ledger, &dataset, total_epsilon, total_delta),
        Command::Ledger(LedgerCommand::Show { ledger }) => ledger_cmd::show(&ledger),
        Command::Ledger(LedgerCommand::Check { ledger, models }) => {
            ledger_cmd::check(&ledger, &models)
        }
    }
}

/// `--neighbouring`'s values: dp-fit's names, shown in the help and parsed by dp-fit.
fn neighbouring() -> impl clap::builder::TypedValueParser<Value = dp_fit::spec::Neighbouring> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["replace-one", "add-remove"])
        .try_map(|name| name.parse::<dp_fit::spec::Neighbouring>())
}

/// `--accountant`'s values: dp-erm's names, parsed by dp-fit.
fn accountant() -> impl clap::builder::TypedValueParser<Value = dp_fit::spec::Accountant> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["pld", "rdp"])
        .map(|name| dp_fit::spec::parse_accountant(&name).unwrap_or_default())
}

/// A value named by one of dp-fit's tables (`names`: the table's spellings, shown in the help).
fn names<T>(names: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = dp_fit::recipe::RecipeError> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<T>())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(Failure(message)) = cleanup::install() {
        eprintln!("dpml: error: {message}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("dpml: error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
#[path = "parity_tests.rs"]
mod parity_tests;
