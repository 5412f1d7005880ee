//! The pieces of `--json` output that are not one fixed struct: objects whose keys are data
//! (PRM field names, capability names, register names), written in their order.

use serde::ser::{Serialize, Serializer};

/// Name / value pairs written as one JSON object, keys in the order given.
pub(crate) struct Object<K, V>(pub Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Object<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// One line of JSON; plain data always serialises, so an empty line is never seen.
pub(crate) fn line<T: Serialize>(doc: &T) -> String {
    serde_json::to_string(doc).unwrap_or_default()
}
