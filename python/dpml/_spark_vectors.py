"""What the executors of ``dpml.spark``'s regressors run to read a batch: feature vectors
(an array column) and targets as numpy arrays. Imports nothing of ``dpml.spark``, so an
executor's worker loads it alone."""

import numpy as np

# The feature vectors' column as the executors read it (arrays of numbers).
_FEATURES = "__dpml_features"


class _RowRefused(Exception):
    """A row of a batch that cannot be read as a feature vector and a target."""

    def __init__(self, row, why):
        super().__init__(why)
        self.row = row
        self.why = why


def _dense_batch(batch, n_features, with_targets):
    """``(x, y)``: the batch's feature vectors as an ``n × n_features`` float64 matrix and
    its targets as float64 (None without ``with_targets``); a missing vector or one of
    another length raises ``_RowRefused`` naming its row (never a value). Missing targets
    and elements become NaN, which the Rust checks refuse by row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = batch.column(batch.schema.get_field_index(_FEATURES))
    n = batch.num_rows
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise _RowRefused(row, "its features vector is missing")
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    wrong = np.flatnonzero(lengths != n_features)
    if wrong.size:
        raise _RowRefused(
            int(wrong[0]), f"its features vector's length is not n_features={n_features}"
        )
    values = column.flatten().cast(pa.float64()).to_numpy(zero_copy_only=False)
    x = np.ascontiguousarray(values, dtype=np.float64).reshape(n, n_features)
    y = None
    if with_targets:
        label = batch.column(batch.schema.get_field_index("label"))
        y = np.ascontiguousarray(
            label.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
        )
    return x, y
