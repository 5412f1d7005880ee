//! Handles given to C: each is the address of an object kept in a table of its kind, so a
//! pointer that is not a live handle of that kind (NULL, destroyed, another kind's, garbage)
//! is refused instead of dereferenced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::{Failure, Result};

/// The live handles of one kind.
pub(crate) struct Table<T> {
    kind: &'static str,
    live: Mutex<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Table<T> {
    pub(crate) const fn new(kind: &'static str) -> Table<T> {
        Table {
            kind,
            live: Mutex::new(None),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<usize, Arc<T>>) -> R) -> R {
        let mut g = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        f(g.get_or_insert_with(HashMap::new))
    }

    /// Keeps `obj` and returns its handle.
    pub(crate) fn insert<H>(&self, obj: T) -> *mut H {
        let obj = Arc::new(obj);
        let p = Arc::as_ptr(&obj) as usize;
        self.with(|m| m.insert(p, obj));
        p as *mut H
    }

    /// The object of handle `p`.
    pub(crate) fn get<H>(&self, p: *const H) -> Result<Arc<T>> {
        if p.is_null() {
            return Err(Failure::new(format!("the {} is NULL", self.kind)));
        }
        self.with(|m| m.get(&(p as usize)).cloned())
            .ok_or_else(|| Failure::new(format!("{p:p} is not a live {}", self.kind)))
    }

    /// Forgets handle `p` and gives its object (dropped when its last user is done).
    pub(crate) fn remove<H>(&self, p: *const H) -> Result<Arc<T>> {
        if p.is_null() {
            return Err(Failure::new(format!("the {} is NULL", self.kind)));
        }
        self.with(|m| m.remove(&(p as usize)))
            .ok_or_else(|| Failure::new(format!("{p:p} is not a live {}", self.kind)))
    }

    /// Every live object, in no order.
    pub(crate) fn all(&self) -> Vec<(usize, Arc<T>)> {
        self.with(|m| m.iter().map(|(k, v)| (*k, Arc::clone(v))).collect())
    }
}

/// An object a handle stands for until its destroy takes it out (a handle's last users may
/// still hold the entry then; they find it gone).
pub(crate) struct Slot<T> {
    what: &'static str,
    obj: Mutex<Option<T>>,
}

impl<T> Slot<T> {
    pub(crate) fn new(what: &'static str, obj: T) -> Slot<T> {
        Slot {
            what,
            obj: Mutex::new(Some(obj)),
        }
    }

    /// Takes the object out, for its destroy.
    pub(crate) fn take(&self) -> Option<T> {
        self.obj
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Runs `f` on the object, unless it was destroyed.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> Result<R>) -> Result<R> {
        let mut g = self.obj.lock().unwrap_or_else(PoisonError::into_inner);
        let o = g
            .as_mut()
            .ok_or_else(|| Failure::new(format!("the {} is destroyed", self.what)))?;
        f(o)
    }
}
