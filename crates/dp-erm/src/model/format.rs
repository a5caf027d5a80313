//! The byte layout of model files (documented on `LinearModel`, "Files").
//!
//! `magic (8) | version (4) | payload length (8) | tag (32) | payload`. The tag covers the
//! first 20 bytes and the payload, so neither the kind (magic), the version nor the length
//! can change without recomputing it. The payload is the model type's name (a bincode
//! string), in authenticated files the purpose's name (a bincode string: length-prefixed),
//! then the model, so one container serves every model type and an authenticated file is
//! bound to the use it was written for.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::key::ModelKey;
use super::purpose::ModelPurpose;
use super::{MAX_MODEL_FEATURES, MAX_MODEL_TEXT_BYTES};
use crate::ErmError;

/// The file format this build writes. Plain files of version 4 (the same layout) are read
/// too; authenticated files of version 4 (no purpose in the payload) are refused by the
/// authenticated loaders, with a message naming the explicitly legacy reader
/// ([`container::load_authenticated_unbound_v4`](crate::container::load_authenticated_unbound_v4))
/// through which a trusted one can be read once and saved again with a purpose. Version 1
/// (a 28-byte header with an FNV-1a checksum, plain files only), version 2 (no model type in
/// the payload) and version 3 (no record of group-shaped noise) are refused with a message
/// saying so.
pub const MODEL_FORMAT_VERSION: u32 = 5;

/// The previous version, whose plain files have this version's layout.
const PREVIOUS_VERSION: u32 = 4;

/// A model type that lives in the shared model container ([`crate::container`]): one file
/// layout, checksum or HMAC, size limits and validation for every model type, each file
/// naming its model type.
///
/// The loaders decode the payload into [`StoredModel::Unchecked`] and accept the model only
/// through [`StoredModel::check`]: the bytes are vouched for by a checksum at best.
pub trait StoredModel: Serialize + Sized {
    /// The name written before the model, checked on reading: a file of another model type
    /// is refused with a message naming both. Printable ASCII, at most 64 bytes.
    const MODEL_TYPE: &'static str;
    /// The model as a decoder produces it, before any check; its encoding must be the
    /// model's.
    type Unchecked: DeserializeOwned;
    /// Validates a decoded model, naming the first invalid field.
    fn check(unchecked: Self::Unchecked) -> Result<Self, ErmError>;
    /// The (ε, δ) of the model's guarantee for replace-one neighbours (None if
    /// non-private), from its metadata ([`crate::Mechanism::replace_one_guarantee`]): what
    /// a [`ModelPurpose::require_private`] demand is checked against.
    fn replace_one_guarantee(&self) -> Option<(f64, f64)>;
}

/// Longest model-type name read back (longer ones are refused before allocating).
const MAX_MODEL_TYPE_BYTES: usize = 64;

/// Magic of plain files (SHA-256 checksum). Version 1 files used it too; the version field
/// tells them apart.
const PLAIN_MAGIC: &[u8; 8] = b"DPERMMDL";
/// Magic of authenticated files (HMAC-SHA256).
const MAC_MAGIC: &[u8; 8] = b"DPERMMAC";

/// The bytes the tag covers before the payload: magic, version, length.
const SEALED_PREFIX: usize = 8 + 4 + 8;
const TAG_BYTES: usize = 32;
/// Magic, version, payload length, tag.
pub(super) const HEADER_BYTES: usize = SEALED_PREFIX + TAG_BYTES;

/// Largest payload read, and the decoder's allocation limit: the numbers of the largest
/// model (`MAX_MODEL_FEATURES` values of 8 bytes in bincode) plus room for the type name,
/// the purpose and the metadata (strings of at most `MAX_MODEL_TEXT_BYTES` and a few
/// numbers) — so a length prefix cannot make the decoder allocate more than a valid model
/// needs. Other model types (kernel models: map and weights) keep to the same number of
/// values.
pub const MAX_PAYLOAD_BYTES: usize = 8 * MAX_MODEL_FEATURES + 5 * MAX_MODEL_TEXT_BYTES + 512;
/// Largest file a loader reads.
pub(super) const MAX_FILE_BYTES: u64 = (HEADER_BYTES + MAX_PAYLOAD_BYTES) as u64;

type HmacSha256 = Hmac<Sha256>;

/// How a file is sealed: which magic it carries and which tag protects it.
#[derive(Clone, Copy)]
pub(super) enum Seal<'a> {
    /// SHA-256: catches corruption, not tampering.
    Checksum,
    /// HMAC-SHA256 under the key, over a payload naming the purpose: only key holders can
    /// write it, and only for that purpose.
    Mac(&'a ModelKey, &'a ModelPurpose),
    /// Reading only: an authenticated file of version 4, whose payload names no purpose.
    UnboundMac(&'a ModelKey),
}

impl<'a> Seal<'a> {
    fn magic(self) -> &'static [u8; 8] {
        match self {
            Seal::Checksum => PLAIN_MAGIC,
            Seal::Mac(..) | Seal::UnboundMac(_) => MAC_MAGIC,
        }
    }

    fn key(self) -> Option<&'a ModelKey> {
        match self {
            Seal::Checksum => None,
            Seal::Mac(key, _) | Seal::UnboundMac(key) => Some(key),
        }
    }

    fn tag(self, prefix: &[u8], payload: &[u8]) -> Result<[u8; TAG_BYTES], ErmError> {
        match self.key() {
            None => {
                let mut sha = Sha256::new();
                sha.update(prefix);
                sha.update(payload);
                Ok(sha.finalize().into())
            }
            Some(key) => {
                let mut mac = keyed_mac(key)?;
                mac.update(prefix);
                mac.update(payload);
                Ok(mac.finalize().into_bytes().into())
            }
        }
    }

    fn verify(self, prefix: &[u8], payload: &[u8], tag: &[u8]) -> Result<(), ErmError> {
        match self.key() {
            // The checksum is no secret: a plain comparison leaks nothing worth having.
            None => {
                if self.tag(prefix, payload)?.as_slice() == tag {
                    Ok(())
                } else {
                    Err(invalid("SHA-256 checksum mismatch (corrupted file)".into()))
                }
            }
            // Constant time: a comparison that stops at the first differing byte would let
            // an attacker guess a valid tag byte by byte from timings.
            Some(key) => {
                let mut mac = keyed_mac(key)?;
                mac.update(prefix);
                mac.update(payload);
                mac.verify_slice(tag).map_err(|_| {
                    invalid(
                        "authentication failed: the HMAC-SHA256 tag does not match this key \
                         (wrong key, or the file was altered)"
                            .into(),
                    )
                })
            }
        }
    }
}

fn keyed_mac(key: &ModelKey) -> Result<HmacSha256, ErmError> {
    // HMAC takes keys of any length, so this cannot fail; mapped rather than unwrapped to
    // keep the loaders free of panics.
    HmacSha256::new_from_slice(key.expose_secret())
        .map_err(|e| invalid(format!("cannot key HMAC-SHA256: {e}")))
}

/// The model as a file sealed by `seal`.
pub(super) fn encode<M: StoredModel>(model: &M, seal: Seal<'_>) -> Result<Vec<u8>, ErmError> {
    let config = bincode::config::standard();
    let mut payload = bincode::serde::encode_to_vec(M::MODEL_TYPE, config)
        .map_err(|e| invalid(format!("cannot encode: {e}")))?;
    match seal {
        Seal::Checksum => {}
        Seal::Mac(_, purpose) => {
            // Refused before writing: the purpose's loader would refuse the file.
            if let Some(why) = purpose.shortfall(model.replace_one_guarantee()) {
                return Err(ErmError::InvalidPurpose(format!(
                    "cannot save under it: {why}"
                )));
            }
            payload.extend(encode_purpose(purpose)?);
        }
        Seal::UnboundMac(_) => {
            return Err(invalid(
                "files without a purpose are only read (format version 4), never written".into(),
            ));
        }
    }
    payload.extend(
        bincode::serde::encode_to_vec(model, config)
            .map_err(|e| invalid(format!("cannot encode: {e}")))?,
    );
    let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
    bytes.extend_from_slice(seal.magic());
    bytes.extend_from_slice(&MODEL_FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let tag = seal.tag(&bytes, &payload)?;
    bytes.extend_from_slice(&tag);
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

/// Reads a file sealed by `seal`. Checks run from the cheapest and most telling (kind,
/// version) to the tag, and only a payload whose tag verifies reaches the decoder, which
/// checks the model type and validates the model (serde `try_from`).
pub(super) fn decode<M: StoredModel>(bytes: &[u8], seal: Seal<'_>) -> Result<M, ErmError> {
    // Kind and version first, so that an old or foreign file says what it is even when it
    // is shorter than this version's header.
    if bytes.len() < 12 {
        return Err(too_short(bytes.len()));
    }
    check_kind(&bytes[..8], seal)?;
    check_version(
        u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")),
        seal,
    )?;
    if bytes.len() < HEADER_BYTES {
        return Err(too_short(bytes.len()));
    }
    let declared = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let (prefix, rest) = bytes.split_at(SEALED_PREFIX);
    let (tag, payload) = rest.split_at(TAG_BYTES);
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(invalid(format!(
            "payload of {} bytes exceeds the {MAX_PAYLOAD_BYTES}-byte limit",
            payload.len()
        )));
    }
    if payload.len() as u64 != declared {
        return Err(invalid(format!(
            "payload is {} bytes but the header says {declared} (truncated or padded file)",
            payload.len()
        )));
    }
    seal.verify(prefix, payload, tag)?;
    // The limit stops a length prefix inside the payload from claiming more memory than a
    // valid model could need.
    let type_config = bincode::config::standard().with_limit::<MAX_MODEL_TYPE_BYTES>();
    let (model_type, type_bytes): (String, usize) =
        bincode::serde::decode_from_slice(payload, type_config).map_err(|e| {
            invalid(format!(
                "cannot decode the model type: {}",
                decode_problem(&e)
            ))
        })?;
    if model_type != M::MODEL_TYPE {
        // Debug formatting escapes any control characters a forged name might carry.
        return Err(invalid(format!(
            "this file holds a {model_type:?} model, not a {:?} model",
            M::MODEL_TYPE
        )));
    }
    let mut body = &payload[type_bytes..];
    if let Seal::Mac(_, purpose) = seal {
        // Compared as encoded (length prefix and bytes): the file's own purpose is never
        // decoded, allocated or quoted.
        let expected = encode_purpose(purpose)?;
        body = body.strip_prefix(expected.as_slice()).ok_or_else(|| {
            invalid(format!(
                "this file was authenticated for another purpose than {:?}; a model saved \
                 for one use is refused in place of another",
                purpose.name()
            ))
        })?;
    }
    let config = bincode::config::standard().with_limit::<MAX_PAYLOAD_BYTES>();
    let (unchecked, used): (M::Unchecked, usize) = bincode::serde::decode_from_slice(body, config)
        .map_err(|e| invalid(format!("cannot decode: {}", decode_problem(&e))))?;
    if used != body.len() {
        return Err(invalid(format!(
            "{} trailing bytes after the model",
            body.len() - used
        )));
    }
    let model = M::check(unchecked)?;
    if let Seal::Mac(_, purpose) = seal
        && let Some(why) = purpose.shortfall(model.replace_one_guarantee())
    {
        return Err(invalid(why));
    }
    Ok(model)
}

/// The purpose's name as the payload holds it: a bincode string (varint length, bytes).
fn encode_purpose(purpose: &ModelPurpose) -> Result<Vec<u8>, ErmError> {
    bincode::serde::encode_to_vec(purpose.name(), bincode::config::standard())
        .map_err(|e| invalid(format!("cannot encode the purpose: {e}")))
}

fn check_kind(magic: &[u8], seal: Seal<'_>) -> Result<(), ErmError> {
    match (magic, seal) {
        (m, Seal::Checksum) if m == PLAIN_MAGIC => Ok(()),
        (m, Seal::Mac(..) | Seal::UnboundMac(_)) if m == MAC_MAGIC => Ok(()),
        (m, Seal::Checksum) if m == MAC_MAGIC => Err(invalid(
            "this is an authenticated model file (magic DPERMMAC); read it with the \
             authenticated loader and its key"
                .into(),
        )),
        (m, Seal::Mac(..) | Seal::UnboundMac(_)) if m == PLAIN_MAGIC => Err(invalid(
            "this is a plain model file (magic DPERMMDL, checksum only): anyone could have \
             written it, so the authenticated loader refuses it"
                .into(),
        )),
        _ => Err(invalid(
            "not a dp-erm model file (wrong magic bytes)".into(),
        )),
    }
}

fn check_version(version: u32, seal: Seal<'_>) -> Result<(), ErmError> {
    match (version, seal) {
        (MODEL_FORMAT_VERSION, Seal::Checksum | Seal::Mac(..))
        | (PREVIOUS_VERSION, Seal::Checksum | Seal::UnboundMac(_)) => return Ok(()),
        (PREVIOUS_VERSION, _) => {
            return Err(invalid(format!(
                "this authenticated file has format version {PREVIOUS_VERSION}, which binds \
                 no purpose into its tag, so it could stand in for any other model signed \
                 with the same key; the authenticated loaders of this build refuse it. If \
                 you trust it, read it once with \
                 dp_erm::container::load_authenticated_unbound_v4 and save it again with a \
                 ModelPurpose"
            )));
        }
        (MODEL_FORMAT_VERSION, _) => {
            return Err(invalid(format!(
                "this authenticated file has format version {MODEL_FORMAT_VERSION} and is \
                 bound to a purpose; read it with the authenticated loader and its \
                 ModelPurpose, not the legacy reader of version {PREVIOUS_VERSION}"
            )));
        }
        _ => {}
    }
    match version {
        3 => Err(invalid(format!(
            "format version 3 is not supported: its metadata does not say whether objective \
             perturbation's noise was shaped to feature groups; this build reads versions \
             {PREVIOUS_VERSION} and {MODEL_FORMAT_VERSION}; re-create the file by training and \
             saving the model with this build"
        ))),
        2 => Err(invalid(format!(
            "format version 2 is not supported: it is the older layout without a model type \
             in the payload; this build reads versions {PREVIOUS_VERSION} and \
             {MODEL_FORMAT_VERSION}; re-create the file by saving the model with this build"
        ))),
        1 => Err(invalid(format!(
            "format version 1 is not supported: it is the older layout (FNV-1a checksum, \
             no authentication) that this build no longer reads; it reads versions \
             {PREVIOUS_VERSION} and {MODEL_FORMAT_VERSION}; re-create the file by saving the \
             model with this build"
        ))),
        v if v < MODEL_FORMAT_VERSION => Err(invalid(format!(
            "format version {v} is not supported: this build reads versions {PREVIOUS_VERSION} \
             and {MODEL_FORMAT_VERSION}"
        ))),
        v => Err(invalid(format!(
            "format version {v} is not supported: it is newer than this build, which reads \
             version {MODEL_FORMAT_VERSION}"
        ))),
    }
}

fn too_short(len: usize) -> ErmError {
    invalid(format!(
        "{len} bytes is shorter than the {HEADER_BYTES}-byte header"
    ))
}

fn invalid(why: String) -> ErmError {
    ErmError::InvalidModelFile(why)
}

/// What a decoding error means for a model file, in words (bincode's own messages print
/// its internal types).
fn decode_problem(error: &bincode::error::DecodeError) -> String {
    use bincode::error::DecodeError;
    match error {
        DecodeError::UnexpectedEnd { .. } => "the payload ends early".to_owned(),
        DecodeError::LimitExceeded => {
            "a length inside the payload exceeds the largest model".to_owned()
        }
        // Messages of the model's own checks during deserialization, already in words.
        DecodeError::OtherString(message) => message.clone(),
        _ => "the payload is not an encoding of this model type".to_owned(),
    }
}
