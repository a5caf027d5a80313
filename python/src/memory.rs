//! Allocations sized by the input, made fallibly: a design too large for the memory
//! available is [`CoreError::Memory`] (Python's `MemoryError`), never the abort that an
//! infallible allocation (`vec!`, `Vec::with_capacity`, `collect`) gives when the allocator
//! refuses.

use crate::error::CoreError;

/// An empty vector with room for `len` elements of `what`, or [`CoreError::Memory`].
pub fn with_capacity<T>(what: &str, len: usize) -> Result<Vec<T>, CoreError> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| CoreError::memory(what, len.saturating_mul(size_of::<T>())))?;
    Ok(out)
}

/// `len` copies of `value`, or [`CoreError::Memory`].
pub fn filled<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>, CoreError> {
    let mut out = with_capacity(what, len)?;
    out.resize(len, value);
    Ok(out)
}

/// A row-major `rows × columns` matrix of `value`, or [`CoreError::Memory`] (a product
/// beyond `usize` included).
pub fn matrix<T: Clone>(
    what: &str,
    rows: usize,
    columns: usize,
    value: T,
) -> Result<Vec<T>, CoreError> {
    let len = rows
        .checked_mul(columns)
        .ok_or_else(|| CoreError::memory(what, usize::MAX))?;
    filled(what, len, value)
}

/// The items of `items` (at most `len` of them) collected into a vector reserved up front,
/// or [`CoreError::Memory`].
pub fn collected<T>(
    what: &str,
    len: usize,
    items: impl IntoIterator<Item = T>,
) -> Result<Vec<T>, CoreError> {
    let mut out = with_capacity(what, len)?;
    out.extend(items);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_allocation_is_a_memory_error_naming_it() {
        let err = filled("the design", usize::MAX / 2, 0.0f64).unwrap_err();
        assert_eq!(err.class_name(), "DPMLMemoryError");
        assert!(err.to_string().contains("the design"), "{err}");
        let err = matrix("the scores", usize::MAX, 3, 0u8).unwrap_err();
        assert!(err.to_string().contains("the scores"), "{err}");
        assert_eq!(filled("x", 3, 1u8).unwrap(), vec![1, 1, 1]);
        assert_eq!(collected("x", 2, [4, 5]).unwrap(), vec![4, 5]);
    }
}
