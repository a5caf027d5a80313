//! The secret key of authenticated model files.

use std::fmt;

use dp_noise::NoiseError;
use rand::TryRng;
use rand::rngs::SysRng;

use crate::ErmError;

/// A secret key for HMAC-SHA256-authenticated model files
/// ([`LinearModel::to_bytes_authenticated`](crate::LinearModel::to_bytes_authenticated)).
///
/// At least [`ModelKey::MIN_BYTES`] bytes: HMAC-SHA256's security is at most the key's
/// entropy, and 32 random bytes match the 256-bit tag. Keys that cannot be secret are
/// refused: an all-zero key, one repeated byte, or any key whose bytes take fewer than
/// [`ModelKey::MIN_DISTINCT_BYTES`] distinct values (32 random bytes take fewer than 8 with
/// probability below 10⁻³⁰, so a real key is never refused). Its `Debug` shows the length
/// only, no error echoes its bytes, and it has no `PartialEq`: tags, not keys, are compared,
/// in constant time.
#[derive(Clone)]
pub struct ModelKey {
    bytes: Box<[u8]>,
}

impl ModelKey {
    /// The shortest key accepted, in bytes.
    pub const MIN_BYTES: usize = 32;

    /// The fewest distinct byte values a key may take: fewer marks a filler or a pattern
    /// (`[0; 32]`, `b"aaaa…"`, `0101…`), not a secret.
    pub const MIN_DISTINCT_BYTES: usize = 8;

    /// A key from secret bytes (at least [`ModelKey::MIN_BYTES`] of them, which should be
    /// uniformly random: a password is not a key). A key too short, or whose bytes take
    /// fewer than [`ModelKey::MIN_DISTINCT_BYTES`] distinct values, is refused; the error
    /// gives its length or its number of distinct values, never its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        if bytes.len() < Self::MIN_BYTES {
            return Err(ErmError::InvalidCount {
                what: "model key length in bytes",
                value: bytes.len(),
                requirement: "at least 32",
            });
        }
        let mut seen = [false; 256];
        for &b in bytes {
            seen[usize::from(b)] = true;
        }
        let distinct = seen.iter().filter(|&&s| s).count();
        if distinct < Self::MIN_DISTINCT_BYTES {
            return Err(ErmError::WeakModelKey { distinct });
        }
        Ok(Self {
            bytes: bytes.into(),
        })
    }

    /// A fresh 32-byte key from the operating system's random generator. Store it (see
    /// [`ModelKey::expose_secret`]) to load the files it authenticates later.
    pub fn from_os_entropy() -> Result<Self, ErmError> {
        let mut bytes = [0u8; Self::MIN_BYTES];
        SysRng
            .try_fill_bytes(&mut bytes)
            .map_err(|e| ErmError::Noise(NoiseError::EntropyUnavailable(e.to_string())))?;
        Self::from_bytes(&bytes)
    }

    /// The secret bytes, for storing the key. Anyone who reads them can authenticate any
    /// model under this key.
    pub fn expose_secret(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for ModelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the bytes: keys end up in logs through `{:?}` of structs that hold them.
        write!(f, "ModelKey({} secret bytes)", self.bytes.len())
    }
}
