//! Reading the JSON specs the Python side hands over (tokenizer.json objects of stages and models),
//! with errors that name the field.
//!
//! Nothing here trusts the document: a missing field, a wrong type, a null, a negative or too large
//! number is an [`Error::Field`] naming the path from the root (`pre_tokenizer_json.pretokenizers[1]
//! .behavior`), what was expected and what was found. Depth is bounded by `serde_json`'s recursion
//! limit (128), which every parser here stays within because it recurses once per JSON level.
//!
//! ```
//! use tinyllm::spec::Spec;
//! let doc: serde_json::Value = serde_json::from_str(r#"{"type": "Strip", "strip_left": 1}"#).unwrap();
//! let spec = Spec::root(&doc, "normalizer_json");
//! assert_eq!(spec.str("type").unwrap(), "Strip");
//! let err = spec.bool_or("strip_left", true).unwrap_err();
//! assert_eq!(err.to_string(), "normalizer_json.strip_left: expected true or false, found the number 1");
//! ```

use serde_json::Value;

use crate::Error;

/// A JSON value and the path that led to it.
#[derive(Clone, Copy)]
pub struct Spec<'v, 'p> {
    value: &'v Value,
    /// The step that led here (parent and key or index), if this is not the root.
    parent: Option<&'p PathPart<'v, 'p>>,
    root: &'static str,
}

/// One step of a path (kept by reference, so walking down allocates nothing until an error).
pub enum PathPart<'v, 'p> {
    Key(Spec<'v, 'p>, &'p str),
    Index(Spec<'v, 'p>, usize),
}

/// A short description of a JSON value for error messages: its kind, and its text when short.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("the string {s:?}"),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("a list of {} items", a.len()),
        Value::Object(o) => format!("an object with {} keys", o.len()),
    }
}

impl<'v, 'p> Spec<'v, 'p> {
    /// The document itself, called `name` in errors.
    pub fn root(value: &'v Value, name: &'static str) -> Self {
        Spec {
            value,
            parent: None,
            root: name,
        }
    }

    pub fn value(&self) -> &'v Value {
        self.value
    }

    /// The path of this value, e.g. `model_json.vocab["[UNK]"]` or `normalizer_json.normalizers[2]`.
    pub fn path(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut at = self.parent;
        while let Some(part) = at {
            match part {
                PathPart::Key(parent, key) => {
                    let plain = !key.is_empty()
                        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    parts.push(if plain {
                        format!(".{key}")
                    } else {
                        format!("[{key:?}]")
                    });
                    at = parent.parent;
                }
                PathPart::Index(parent, k) => {
                    parts.push(format!("[{k}]"));
                    at = parent.parent;
                }
            }
        }
        parts.reverse();
        format!("{}{}", self.root, parts.concat())
    }

    /// An error about this value: expected `expected`, found what it is.
    pub fn error(&self, expected: &str) -> Error {
        Error::Field {
            field: self.path(),
            expected: expected.into(),
            found: describe(self.value),
        }
    }

    /// An error about field `key` of this object.
    pub fn field_error(&self, key: &str, expected: &str, found: String) -> Error {
        Error::Field {
            field: format!("{}.{key}", self.path()),
            expected: expected.into(),
            found,
        }
    }

    /// Field `key`, or None when it is absent or null. Errors when this value is not an object.
    pub fn get(&self, key: &str) -> Result<Option<&'v Value>, Error> {
        let Value::Object(map) = self.value else {
            return Err(self.error("an object"));
        };
        Ok(map.get(key).filter(|v| !v.is_null()))
    }

    /// Field `key`, which must be present and not null.
    pub fn required(&self, key: &str) -> Result<&'v Value, Error> {
        self.get(key)?
            .ok_or_else(|| self.field_error(key, "a value", "nothing (missing or null)".into()))
    }

    /// Run `f` on field `key` as a [`Spec`] with its path (for nested objects and lists).
    pub fn with_field<T>(
        &self,
        key: &str,
        f: impl FnOnce(Spec<'v, '_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let value = self.required(key)?;
        let part = PathPart::Key(*self, key);
        f(Spec {
            value,
            parent: Some(&part),
            root: self.root,
        })
    }

    /// Run `f` on item `k` of this list, with its index in the path.
    pub fn with_item<T>(
        &self,
        k: usize,
        f: impl FnOnce(Spec<'v, '_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let Value::Array(items) = self.value else {
            return Err(self.error("a list"));
        };
        let Some(value) = items.get(k) else {
            return Err(self.error(&format!("a list of at least {} items", k + 1)));
        };
        let part = PathPart::Index(*self, k);
        f(Spec {
            value,
            parent: Some(&part),
            root: self.root,
        })
    }

    /// This value as a count or size: an integer >= 0 that fits in usize.
    pub fn as_usize(&self) -> Result<usize, Error> {
        self.value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.error("an integer >= 0"))
    }

    /// Run `f` on each item of this list, with its index in the path.
    pub fn each_item<T>(
        &self,
        mut f: impl FnMut(Spec<'v, '_>) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        let Value::Array(items) = self.value else {
            return Err(self.error("a list"));
        };
        let mut out = Vec::with_capacity(items.len());
        for (k, value) in items.iter().enumerate() {
            let part = PathPart::Index(*self, k);
            out.push(f(Spec {
                value,
                parent: Some(&part),
                root: self.root,
            })?);
        }
        Ok(out)
    }

    /// Run `f` on each (key, value) of this object, in document order, the key in the path.
    pub fn each_entry<T>(
        &self,
        mut f: impl FnMut(&'v str, Spec<'v, '_>) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        let Value::Object(map) = self.value else {
            return Err(self.error("an object"));
        };
        let mut out = Vec::with_capacity(map.len());
        for (key, value) in map {
            let part = PathPart::Key(*self, key);
            out.push(f(
                key,
                Spec {
                    value,
                    parent: Some(&part),
                    root: self.root,
                },
            )?);
        }
        Ok(out)
    }

    /// This value as a string.
    pub fn as_str(&self) -> Result<&'v str, Error> {
        self.value.as_str().ok_or_else(|| self.error("a string"))
    }

    /// This value as an id: an integer in 0..2^32.
    pub fn as_u32(&self) -> Result<u32, Error> {
        self.value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| self.error("an integer in 0..2^32"))
    }

    /// This value as a finite number.
    pub fn as_f64(&self) -> Result<f64, Error> {
        self.value
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.error("a finite number"))
    }

    /// String field `key` (required).
    pub fn str(&self, key: &str) -> Result<&'v str, Error> {
        self.with_field(key, |v| v.as_str())
    }

    /// Boolean field `key`, `default` when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, Error> {
        match self.get(key)? {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.field_error(key, "true or false", describe(other))),
        }
    }

    /// Optional boolean field `key`: None when absent or null.
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key)? {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.field_error(key, "true, false or null", describe(other))),
        }
    }

    /// Optional id field `key`: None when absent or null.
    pub fn opt_u32(&self, key: &str) -> Result<Option<u32>, Error> {
        match self.get(key)? {
            None => Ok(None),
            Some(_) => self.with_field(key, |v| v.as_u32()).map(Some),
        }
    }

    /// The `type` field of a stage object.
    pub fn type_name(&self) -> Result<&'v str, Error> {
        self.str("type")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn errors_name_the_path_expected_and_found() {
        let d = doc(r#"{"a": [{"b": "x"}, {"b": -1}], "weird key": 5}"#);
        let spec = Spec::root(&d, "doc");
        let err = spec
            .with_field("a", |a| {
                a.each_item(|item| item.with_field("b", |b| b.as_u32()))
            })
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "doc.a[0].b: expected an integer in 0..2^32, found the string \"x\""
        );
        let err = spec.with_field("weird key", |v| v.as_str()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "doc[\"weird key\"]: expected a string, found the number 5"
        );
        let err = spec.str("missing").unwrap_err();
        assert_eq!(
            err.to_string(),
            "doc.missing: expected a value, found nothing (missing or null)"
        );
    }

    #[test]
    fn numbers_out_of_range_are_errors_not_truncations() {
        let d = doc(r#"{"id": 4294967296, "neg": -3, "float": 1.5, "ok": 7}"#);
        let spec = Spec::root(&d, "m");
        assert!(spec.opt_u32("id").is_err());
        assert!(spec.opt_u32("neg").is_err());
        assert!(spec.opt_u32("float").is_err());
        assert_eq!(spec.opt_u32("ok").unwrap(), Some(7));
        assert_eq!(spec.opt_u32("absent").unwrap(), None);
    }

    #[test]
    fn a_non_object_is_an_error_wherever_a_field_is_read() {
        for text in ["null", "[]", "3", "\"s\""] {
            let d = doc(text);
            let spec = Spec::root(&d, "x");
            assert!(spec.type_name().is_err(), "{text}");
            assert!(spec.bool_or("flag", true).is_err(), "{text}");
        }
    }
}
