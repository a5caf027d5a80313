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
/// entropy, and 32 random bytes match the 256-bit tag. Its `Debug` shows the length only,
/// and it has no `PartialEq`: tags, not keys, are compared, in constant time.
#[derive(Clone)]
pub struct ModelKey {
    bytes: Box<[u8]>,
}

impl ModelKey {
    /// The shortest key accepted, in bytes.
    pub const MIN_BYTES: usize = 32;

    /// A key from secret bytes (at least [`ModelKey::MIN_BYTES`] of them, which should be
    /// uniformly random: a password is not a key).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        if bytes.len() < Self::MIN_BYTES {
            return Err(ErmError::InvalidCount {
                what: "model key length in bytes",
                value: bytes.len(),
                requirement: "at least 32",
            });
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
