//! Arrow arrays as the encoder reads them: numbers of any integer or float type, and text.
//! Shared by the Parquet reader and the Python package's frames (which arrive through
//! Arrow's C stream interface, without this crate's file readers).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::encode::Cell;

/// An Arrow array of any integer or float type as optional f64 values (nulls as `None`);
/// `None` for any other type. Shared by the Parquet reader and the Python package's frames.
pub fn arrow_numbers(array: &ArrayRef) -> Option<Vec<Option<f64>>> {
    macro_rules! cast {
        ($t:ty) => {
            array
                .as_primitive::<$t>()
                .iter()
                .map(|v| v.map(|v| v as f64))
                .collect()
        };
    }
    Some(match array.data_type() {
        DataType::Float64 => cast!(Float64Type),
        DataType::Float32 => cast!(Float32Type),
        DataType::Int8 => cast!(Int8Type),
        DataType::Int16 => cast!(Int16Type),
        DataType::Int32 => cast!(Int32Type),
        DataType::Int64 => cast!(Int64Type),
        DataType::UInt8 => cast!(UInt8Type),
        DataType::UInt16 => cast!(UInt16Type),
        DataType::UInt32 => cast!(UInt32Type),
        DataType::UInt64 => cast!(UInt64Type),
        _ => return None,
    })
}

/// Row `i` of an Arrow text array (Utf8, LargeUtf8 or Utf8View) as a cell for the encoder;
/// a null, or an array of another type, is [`Cell::Null`] (callers admit only these three
/// text types).
pub fn arrow_text_cell(array: &ArrayRef, i: usize) -> Cell<'_> {
    if array.is_null(i) {
        return Cell::Null;
    }
    match array.data_type() {
        DataType::Utf8 => Cell::Text(array.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => Cell::Text(array.as_string::<i64>().value(i).as_bytes()),
        DataType::Utf8View => Cell::Text(array.as_string_view().value(i).as_bytes()),
        _ => Cell::Null,
    }
}
