//! Number spaces for firmware objects: dense, O(1) lookups for the datapath.

/// Objects of one kind, numbered `base + slot`. Freed numbers are reused, lowest slot last
/// freed first, as firmware reuses its numbers.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    base: u32,
    limit: u32,
    items: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Slab<T> {
    /// A number space starting at `base` holding at most `limit` objects.
    pub(crate) fn new(base: u32, limit: u32) -> Self {
        Slab {
            base,
            limit,
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Inserts `value` and returns its number, or `None` when the space is full.
    pub(crate) fn insert(&mut self, value: T) -> Option<u32> {
        if self.live as u64 >= u64::from(self.limit) {
            return None;
        }
        let slot = match self.free.pop() {
            Some(s) => {
                self.items[s as usize] = Some(value);
                s
            }
            None => {
                let s = u32::try_from(self.items.len()).ok()?;
                self.items.push(Some(value));
                s
            }
        };
        self.live += 1;
        Some(self.base + slot)
    }

    /// Inserts with a number chosen by `make` from the number it will get.
    pub(crate) fn insert_with(&mut self, make: impl FnOnce(u32) -> T) -> Option<u32> {
        let id = self.insert_placeholder()?;
        let slot = (id - self.base) as usize;
        self.items[slot] = Some(make(id));
        Some(id)
    }

    fn insert_placeholder(&mut self) -> Option<u32> {
        if self.live as u64 >= u64::from(self.limit) {
            return None;
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = u32::try_from(self.items.len()).ok()?;
                self.items.push(None);
                s
            }
        };
        self.live += 1;
        Some(self.base + slot)
    }

    fn slot(&self, id: u32) -> Option<usize> {
        id.checked_sub(self.base).map(|s| s as usize)
    }

    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        self.items.get(self.slot(id)?)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let s = self.slot(id)?;
        self.items.get_mut(s)?.as_mut()
    }

    pub(crate) fn remove(&mut self, id: u32) -> Option<T> {
        let s = self.slot(id)?;
        let v = self.items.get_mut(s)?.take()?;
        self.free.push(s as u32);
        self.live -= 1;
        Some(v)
    }

    pub(crate) fn len(&self) -> usize {
        self.live
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        let base = self.base;
        self.items
            .iter()
            .enumerate()
            .filter_map(move |(i, v)| v.as_ref().map(|v| (base + i as u32, v)))
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> {
        let base = self.base;
        self.items
            .iter_mut()
            .enumerate()
            .filter_map(move |(i, v)| v.as_mut().map(|v| (base + i as u32, v)))
    }

    #[cfg(test)]
    pub(crate) fn ids(&self) -> Vec<u32> {
        self.iter().map(|(id, _)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reused_and_limits_hold() {
        let mut s = Slab::new(0x10, 2);
        let a = s.insert("a").unwrap();
        let b = s.insert("b").unwrap();
        assert_eq!((a, b), (0x10, 0x11));
        assert!(s.insert("c").is_none());
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None);
        assert_eq!(s.get(0x0f), None);
        assert_eq!(s.insert("d"), Some(0x10));
        assert_eq!(s.len(), 2);
        assert_eq!(s.ids(), vec![0x10, 0x11]);
    }
}
