//! Declarative PRM layouts and typed views over mailbox bytes.
//!
//! # Bit numbering
//!
//! The PRM and the kernel's `include/linux/mlx5/mlx5_ifc.h` describe every structure as a
//! sequence of big-endian 32-bit dwords and number bits from the most significant bit of the
//! first dword (`u8 log_cq_size[0x5]` at bit 0x63 means bits 28..24 of dword 3). Read as one
//! big-endian bit string, bit `n` of a layout is bit `7 - n % 8` of byte `n / 8`, so a field is
//! a run of consecutive bits in that string. [`Field`] stores the offset and width in exactly
//! those terms, so numbers can be compared with the public headers one for one.
//!
//! # Declaring a layout
//!
//! [`layout!`](crate::layout) declares one layout as a module named after the mlx5_ifc struct
//! (without `mlx5_ifc_` and `_bits`):
//!
//! ```
//! mlx5_dpa::layout! {
//!     /// An example.
//!     pub example_ctx: 0x40 {
//!         status @ 0x0 : 4,
//!         log_size @ 0x1b : 5,
//!         counters @ 0x20 : [8; 4],
//!     }
//! }
//! use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
//! let mut buf = [0u8; example_ctx::Layout::SIZE_BYTES];
//! let mut v = ViewMut::<example_ctx::Layout>::new(&mut buf).unwrap();
//! v.set(example_ctx::log_size, 7);
//! assert_eq!(buf, [0, 0, 0, 7, 0, 0, 0, 0]);
//! ```
//!
//! Each field is `name @ bit_offset : spec` with spec one of
//! - `W`: a scalar of `W` bits;
//! - `[W; N]`: an array of `N` scalars of `W` bits; `[W; flex]`: a trailing array of any length
//!   (mlx5_ifc's `pas[0][0x40]`), which starts at the declared size and is not part of it;
//! - `other`: a nested layout (`other` is the module of another layout in scope);
//! - `[other; N]`: an array of nested layouts.
//!
//! Reserved gaps are simply not declared. Fields are declared in ascending offset order; the
//! declaration is checked when the crate compiles (a failed check is a compile error in the
//! layout's module): every field lies inside the declared size, fields do not overlap, the size
//! is a whole number of dwords, scalars wider than 64 bits are byte aligned, and a flexible
//! array is last and starts at the end.
//!
//! # Views
//!
//! [`View`] and [`ViewMut`] wrap a byte slice after one length check. After that check no
//! accessor panics: every [`Field`] of a layout lies inside the layout's fixed size by
//! construction. Elements of flexible arrays are reached through [`View::flex_get`] /
//! [`ViewMut::flex_set`], which check the slice length and return an error.
//!
//! Fields of layouts declared `#[provisional]` may be moved at run time
//! ([`overrides`](super::overrides)): views resolve them where they stand. A field reached
//! through [`Nested::at`] keeps its declared place (the driver and the model view provisional
//! contexts through their own layouts).
//!
//! This module has no `unsafe` and does no I/O.

use core::fmt;
use core::marker::PhantomData;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// What kind of thing a field of a layout is, for generic walkers (decoder, JSON table).
#[derive(Debug, Clone, Copy)]
pub enum FieldKind {
    /// An unsigned value of `width` bits.
    Scalar,
    /// `count` scalars of `elem_width` bits each; `count == 0` marks a flexible trailing array.
    Array { count: u32, elem_width: u32 },
    /// A nested layout.
    Nested(&'static LayoutDesc),
    /// `count` consecutive nested layouts.
    NestedArray {
        count: u32,
        elem: &'static LayoutDesc,
    },
}

/// One declared field, as data.
#[derive(Debug, Clone, Copy)]
pub struct FieldDesc {
    /// Name exactly as in the PRM / mlx5_ifc.h.
    pub name: &'static str,
    /// Bit offset from the most significant bit of the first dword.
    pub offset: u32,
    /// Width in bits (the whole array or nested layout for aggregates; 0 for flexible arrays).
    pub width: u32,
    pub kind: FieldKind,
}

/// One declared layout, as data.
#[derive(Debug, Clone, Copy)]
pub struct LayoutDesc {
    /// Name exactly as in mlx5_ifc.h, without `mlx5_ifc_` / `_bits`.
    pub name: &'static str,
    /// Size of the fixed part in bits (a multiple of 32).
    pub size_bits: u32,
    /// `true` when the layout is not public and was inferred (see `layouts/dpa.rs`).
    pub provisional: bool,
    /// Fields in ascending offset order, reserved gaps omitted.
    pub fields: &'static [FieldDesc],
}

impl LayoutDesc {
    /// Size of the fixed part in bytes.
    pub const fn size_bytes(&self) -> usize {
        (self.size_bits / 8) as usize
    }

    /// The flexible trailing array, if the layout has one.
    pub fn flex(&self) -> Option<&FieldDesc> {
        self.fields
            .last()
            .filter(|f| matches!(f.kind, FieldKind::Array { count: 0, .. }))
    }

    /// Looks a field up by name.
    pub fn field(&self, name: &str) -> Option<&FieldDesc> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Implemented by the marker type `Layout` of every declared layout module.
pub trait Layout: 'static {
    /// The layout as data.
    const DESC: LayoutDesc;
    /// Size of the fixed part in bytes.
    const SIZE_BYTES: usize = Self::DESC.size_bytes();
}

/// Panics (at compile time, when used in a `const`) if a layout declaration is inconsistent.
///
/// Called by [`layout!`](crate::layout) for every layout; see the module docs for the rules.
pub const fn check_layout(d: &LayoutDesc) {
    if d.size_bits == 0 || !d.size_bits.is_multiple_of(32) {
        panic!("layout size is not a whole number of dwords");
    }
    let mut end = 0u32;
    let mut i = 0;
    while i < d.fields.len() {
        let f = &d.fields[i];
        let last = i + 1 == d.fields.len();
        match f.kind {
            FieldKind::Array {
                count: 0,
                elem_width,
            } => {
                if !last || f.offset != d.size_bits {
                    panic!("a flexible array must be the last field and start at the layout size");
                }
                if elem_width == 0 || elem_width % 8 != 0 || !f.offset.is_multiple_of(8) {
                    panic!("flexible array elements must be whole, byte-aligned bytes");
                }
            }
            FieldKind::Array { count, elem_width } => {
                if count as u64 * elem_width as u64 != f.width as u64 || elem_width > 64 {
                    panic!(
                        "array width does not match its elements (or elements wider than 64 bits)"
                    );
                }
            }
            FieldKind::NestedArray { count, elem } => {
                if count as u64 * elem.size_bits as u64 != f.width as u64 {
                    panic!("nested array width does not match its elements");
                }
            }
            FieldKind::Nested(inner) => {
                if inner.size_bits != f.width {
                    panic!("nested field width does not match the nested layout's size");
                }
            }
            FieldKind::Scalar => {
                if f.width == 0 {
                    panic!("zero-width scalar field");
                }
                if f.width > 64 && (!f.width.is_multiple_of(8) || !f.offset.is_multiple_of(8)) {
                    panic!("scalars wider than 64 bits must be byte aligned");
                }
            }
        }
        if f.offset < end {
            panic!("fields overlap or are not in ascending offset order");
        }
        if !matches!(f.kind, FieldKind::Array { count: 0, .. }) {
            end = f.offset + f.width;
            if end > d.size_bits {
                panic!("field extends past the declared layout size");
            }
        }
        i += 1;
    }
}

/// A field of layout `L`: bit offset and width. Always lies inside `L`'s fixed size. `T` is
/// the integer type its width reads as ([`View::value`]; [`FieldType`]): `bool` for one bit,
/// else the smallest of `u8`, `u16`, `u32`, `u64` that holds it.
pub struct Field<L, T = u64> {
    offset: u32,
    width: u32,
    _layout: PhantomData<fn() -> (L, T)>,
}

impl<L, T> Clone for Field<L, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L, T> Copy for Field<L, T> {}
impl<L, T> fmt::Debug for Field<L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Field {{ offset: {:#x}, width: {:#x} }}",
            self.offset, self.width
        )
    }
}

/// The type a field reads as: its width's own integer, or a PRM enumeration
/// ([`enums`](super::enums)). Integer values come from the field's own bits, so they always fit
/// (typed values are read only from layouts that are not provisional, whose fields no
/// override moves); an enumeration's value is a `Result`, as the bits may name no variant.
pub trait FieldType: Copy {
    /// What [`View::value`] returns: `Self` for integers, `Result<Self, UnknownValue>` for
    /// enumerations.
    type Value;
    /// The widest field this type holds.
    const BITS: u32;
    /// The value of the field's bits.
    fn from_bits(bits: u64) -> Self::Value;
    /// The bits of a value.
    fn to_bits(self) -> u64;
}

impl FieldType for bool {
    type Value = bool;
    const BITS: u32 = 1;
    fn from_bits(bits: u64) -> Self {
        bits & 1 != 0
    }
    fn to_bits(self) -> u64 {
        u64::from(self)
    }
}

macro_rules! field_types {
    ($($t:ty),*) => {$(
        impl FieldType for $t {
            type Value = $t;
            const BITS: u32 = <$t>::BITS;
            fn from_bits(bits: u64) -> Self {
                // Lossless: the field's width is at most this type's.
                bits as $t
            }
            fn to_bits(self) -> u64 {
                u64::from(self)
            }
        }
    )*};
}
field_types!(u8, u16, u32, u64);

/// A width in bits, as a type: [`Width::Type`] is the integer a field of that width reads as.
pub struct Bits<const N: u32>;

/// The integer type of a width ([`Bits`]).
pub trait Width {
    type Type: FieldType;
}

macro_rules! widths {
    ($t:ty: $($n:literal)*) => {$( impl Width for Bits<$n> { type Type = $t; } )*};
}
widths!(bool: 1);
widths!(u8: 2 3 4 5 6 7 8);
widths!(u16: 9 10 11 12 13 14 15 16);
widths!(u32: 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
widths!(u64: 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
    60 61 62 63 64 128 256);

impl<L, T> Field<L, T> {
    /// The same field read as a plain `u64` (for code handling fields of several widths).
    pub const fn untyped(self) -> Field<L> {
        Field {
            offset: self.offset,
            width: self.width,
            _layout: PhantomData,
        }
    }
}

impl<L: Layout, T> Field<L, T> {
    /// Used by [`layout!`](crate::layout); the layout check proves the field in range.
    #[doc(hidden)]
    pub const fn __new(offset: u32, width: u32) -> Self {
        Self {
            offset,
            width,
            _layout: PhantomData,
        }
    }
    /// Bit offset from the start of `L`.
    pub const fn offset(self) -> u32 {
        self.offset
    }
    /// Width in bits.
    pub const fn width(self) -> u32 {
        self.width
    }
    /// The field where it stands now: as declared, or, for a field of a provisional layout,
    /// where [`overrides`](super::overrides) moved it (a constant branch for the others).
    #[inline(always)]
    fn resolved(self) -> Self {
        if L::DESC.provisional {
            let (offset, width) = resolve(L::DESC.name, self.offset, self.width);
            Field {
                offset,
                width,
                _layout: PhantomData,
            }
        } else {
            self
        }
    }
    /// Largest value the field holds.
    pub const fn max(self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }
}

/// A nested layout `M` inside layout `L`.
pub struct Nested<L, M> {
    offset: u32,
    _p: PhantomData<fn() -> (L, M)>,
}
impl<L, M> Clone for Nested<L, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L, M> Copy for Nested<L, M> {}

impl<L: Layout, M: Layout> Nested<L, M> {
    #[doc(hidden)]
    pub const fn __new(offset: u32) -> Self {
        Self {
            offset,
            _p: PhantomData,
        }
    }
    /// Bit offset of the nested layout inside `L`.
    pub const fn offset(self) -> u32 {
        self.offset
    }
    /// A field of the nested layout, addressed from the outer one.
    pub const fn at<T>(self, f: Field<M, T>) -> Field<L, T> {
        Field {
            offset: self.offset + f.offset,
            width: f.width,
            _layout: PhantomData,
        }
    }
    /// A layout nested inside the nested layout, addressed from the outer one.
    pub const fn nested<N: Layout>(self, n: Nested<M, N>) -> Nested<L, N> {
        Nested {
            offset: self.offset + n.offset,
            _p: PhantomData,
        }
    }
}

/// A fixed-length array of `count` scalars inside layout `L`.
pub struct ArrayField<L> {
    offset: u32,
    elem_width: u32,
    count: u32,
    _p: PhantomData<fn() -> L>,
}
impl<L> Clone for ArrayField<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for ArrayField<L> {}

impl<L: Layout> ArrayField<L> {
    #[doc(hidden)]
    pub const fn __new(offset: u32, elem_width: u32, count: u32) -> Self {
        Self {
            offset,
            elem_width,
            count,
            _p: PhantomData,
        }
    }
    /// Number of elements.
    pub const fn len(self) -> u32 {
        self.count
    }
    /// Whether the array has no elements (never true for a declared array).
    pub const fn is_empty(self) -> bool {
        self.count == 0
    }
    /// Element `i`, or `None` past the end.
    pub const fn at(self, i: u32) -> Option<Field<L>> {
        if i < self.count {
            Some(Field {
                offset: self.offset + i * self.elem_width,
                width: self.elem_width,
                _layout: PhantomData,
            })
        } else {
            None
        }
    }
}

/// A fixed-length array of `count` nested layouts `M` inside `L`.
pub struct NestedArray<L, M> {
    offset: u32,
    count: u32,
    _p: PhantomData<fn() -> (L, M)>,
}
impl<L, M> Clone for NestedArray<L, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L, M> Copy for NestedArray<L, M> {}

impl<L: Layout, M: Layout> NestedArray<L, M> {
    #[doc(hidden)]
    pub const fn __new(offset: u32, count: u32) -> Self {
        Self {
            offset,
            count,
            _p: PhantomData,
        }
    }
    /// Number of elements.
    pub const fn len(self) -> u32 {
        self.count
    }
    /// Whether the array has no elements (never true for a declared array).
    pub const fn is_empty(self) -> bool {
        self.count == 0
    }
    /// Element `i`, or `None` past the end.
    pub const fn at(self, i: u32) -> Option<Nested<L, M>> {
        if i < self.count {
            Some(Nested {
                offset: self.offset + i * M::DESC.size_bits,
                _p: PhantomData,
            })
        } else {
            None
        }
    }
}

/// A trailing array of any length (mlx5_ifc `pas[0][0x40]`), starting at the end of `L`.
pub struct FlexArray<L> {
    elem_bytes: usize,
    _p: PhantomData<fn() -> L>,
}
impl<L> Clone for FlexArray<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for FlexArray<L> {}

impl<L: Layout> FlexArray<L> {
    #[doc(hidden)]
    pub const fn __new(elem_width: u32) -> Self {
        Self {
            elem_bytes: (elem_width / 8) as usize,
            _p: PhantomData,
        }
    }
    /// Bytes per element.
    pub const fn elem_bytes(self) -> usize {
        self.elem_bytes
    }
    /// Buffer length that holds the fixed part and `n` elements.
    pub const fn buf_len(self, n: usize) -> usize {
        L::SIZE_BYTES + n * self.elem_bytes
    }
    fn range(self, i: usize) -> (usize, usize) {
        let start = L::SIZE_BYTES + i * self.elem_bytes;
        (start, start + self.elem_bytes)
    }
}

/// Errors of the layout layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The buffer is shorter than the layout.
    #[error("{layout}: buffer of {got} bytes is shorter than the layout's {need} bytes")]
    TooShort {
        layout: &'static str,
        need: usize,
        got: usize,
    },
    /// A value does not fit its field.
    #[error("{layout}: value {value:#x} does not fit in a {width}-bit field at bit {offset:#x}")]
    ValueTooWide {
        layout: &'static str,
        offset: u32,
        width: u32,
        value: u64,
    },
    /// A flexible-array element past the end of the buffer.
    #[error("{layout}: flexible array element {index} lies past the end of a {len}-byte buffer")]
    FlexOutOfRange {
        layout: &'static str,
        index: usize,
        len: usize,
    },
    /// A byte access to a field that is not byte aligned.
    #[error("{layout}: field at bit {offset:#x} of width {width} is not byte aligned")]
    NotByteAligned {
        layout: &'static str,
        offset: u32,
        width: u32,
    },
}

/// Reads `width` (1..=64) bits at bit `offset` of a big-endian bit string.
///
/// The caller guarantees `offset + width <= 8 * buf.len()`; if that were violated the result is
/// 0 rather than a panic (the views never call it that way).
pub fn read_bits(buf: &[u8], offset: u32, width: u32) -> u64 {
    debug_assert!((1..=64).contains(&width));
    // Whole big-endian words (most PRM fields of 16 bits and more): one load.
    if offset.is_multiple_of(8) {
        let at = (offset / 8) as usize;
        match width {
            16 => {
                return buf
                    .get(at..at + 2)
                    .map_or(0, |b| u64::from(u16::from_be_bytes([b[0], b[1]])))
            }
            32 => {
                return buf.get(at..at + 4).map_or(0, |b| {
                    u64::from(u32::from_be_bytes(b.try_into().unwrap_or([0; 4])))
                })
            }
            64 => {
                return buf
                    .get(at..at + 8)
                    .map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
            }
            _ => {}
        }
    }
    let first = (offset / 8) as usize;
    let last = ((offset + width - 1) / 8) as usize; // inclusive
    let Some(bytes) = buf.get(first..=last) else {
        debug_assert!(false, "field outside buffer");
        return 0;
    };
    // At most 9 bytes: accumulate in u128 so that no shift overflows.
    let mut acc: u128 = 0;
    for &b in bytes {
        acc = (acc << 8) | u128::from(b);
    }
    let total_bits = (bytes.len() * 8) as u32;
    let low_pad = total_bits - (offset % 8) - width;
    let mask: u128 = (1u128 << width) - 1;
    ((acc >> low_pad) & mask) as u64
}

/// Writes the low `width` (1..=64) bits of `value` at bit `offset`; no other bit changes.
///
/// Same precondition as [`read_bits`]; violated, nothing is written.
#[inline]
pub fn write_bits(buf: &mut [u8], offset: u32, width: u32, value: u64) {
    debug_assert!((1..=64).contains(&width));
    // A field inside one byte (flags, nibbles: most of the PRM's narrow fields): one
    // read-modify-write, inlined where the field is constant.
    let shift = offset % 8;
    if shift + width <= 8 {
        let Some(b) = buf.get_mut((offset / 8) as usize) else {
            debug_assert!(false, "field outside buffer");
            return;
        };
        let low = 8 - shift - width;
        let mask = ((((1u16 << width) - 1) << low) & 0xff) as u8;
        *b = (*b & !mask) | ((value << low) as u8 & mask);
        return;
    }
    write_bits_wide(buf, offset, width, value);
}

/// [`write_bits`] for a field across bytes.
fn write_bits_wide(buf: &mut [u8], offset: u32, width: u32, value: u64) {
    // Whole big-endian words: one store (a firmware context update writes several of these
    // for every DPA activation).
    if offset.is_multiple_of(8) {
        let at = (offset / 8) as usize;
        let done = match width {
            16 => put(buf, at, &(value as u16).to_be_bytes()),
            32 => put(buf, at, &(value as u32).to_be_bytes()),
            64 => put(buf, at, &value.to_be_bytes()),
            _ => false,
        };
        if done {
            return;
        }
    }
    let first = (offset / 8) as usize;
    let last = ((offset + width - 1) / 8) as usize;
    let Some(bytes) = buf.get_mut(first..=last) else {
        debug_assert!(false, "field outside buffer");
        return;
    };
    let mut acc: u128 = 0;
    for &b in bytes.iter() {
        acc = (acc << 8) | u128::from(b);
    }
    let total_bits = (bytes.len() * 8) as u32;
    let low_pad = total_bits - (offset % 8) - width;
    let mask: u128 = ((1u128 << width) - 1) << low_pad;
    acc = (acc & !mask) | ((u128::from(value) << low_pad) & mask);
    for (i, b) in bytes.iter_mut().rev().enumerate() {
        *b = (acc >> (8 * i)) as u8;
    }
}

/// Copies `bytes` to `buf` at `at`; `false` (nothing written) where they do not fit.
#[inline(always)]
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> bool {
    match buf.get_mut(at..at + bytes.len()) {
        Some(d) => {
            d.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

fn check_len<L: Layout>(len: usize) -> Result<(), LayoutError> {
    if len < L::SIZE_BYTES {
        return Err(LayoutError::TooShort {
            layout: L::DESC.name,
            need: L::SIZE_BYTES,
            got: len,
        });
    }
    Ok(())
}

fn byte_range<L: Layout, T>(f: Field<L, T>) -> Result<core::ops::Range<usize>, LayoutError> {
    let f = f.resolved();
    if !f.offset.is_multiple_of(8) || !f.width.is_multiple_of(8) {
        return Err(LayoutError::NotByteAligned {
            layout: L::DESC.name,
            offset: f.offset,
            width: f.width,
        });
    }
    let start = (f.offset / 8) as usize;
    Ok(start..start + (f.width / 8) as usize)
}

/// A read-only view of layout `L` over a byte buffer at least `L::SIZE_BYTES` long.
pub struct View<'a, L> {
    buf: &'a [u8],
    _l: PhantomData<fn() -> L>,
}

impl<L> Clone for View<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for View<'_, L> {}

impl<'a, L: Layout> View<'a, L> {
    /// Checks the length once; afterwards no accessor panics.
    ///
    /// # Errors
    /// [`LayoutError::TooShort`] when `buf` is shorter than the layout.
    pub fn new(buf: &'a [u8]) -> Result<Self, LayoutError> {
        check_len::<L>(buf.len())?;
        Ok(Self {
            buf,
            _l: PhantomData,
        })
    }
    /// The whole underlying buffer (including any flexible tail).
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    /// Value of a field of at most 64 bits; wider fields give their low 64 bits.
    pub fn get<T>(&self, f: Field<L, T>) -> u64 {
        let f = f.resolved();
        if f.width > 64 {
            return read_bits(self.buf, f.offset + f.width - 64, 64);
        }
        read_bits(self.buf, f.offset, f.width)
    }
    /// Value of a field as its declared type: its width's own integer (`bool`, `u8`, `u16`,
    /// `u32`, `u64`), or `Result<E, UnknownValue>` for a field that holds enumeration `E`.
    ///
    /// Only for layouts that are not provisional (a compile-time check): a provisional field
    /// may be widened at run time by an override, past its declared type; read those with
    /// [`View::get`] and check the value.
    ///
    /// ```compile_fail
    /// use mlx5_dpa::mlx5::layout::{Layout, View};
    /// use mlx5_dpa::mlx5::layouts::dpa::dpa_process;
    /// let b = vec![0u8; dpa_process::Layout::SIZE_BYTES];
    /// let v = View::<dpa_process::Layout>::new(&b).unwrap();
    /// let _status: u32 = v.value(dpa_process::exit_status); // provisional: refused
    /// ```
    pub fn value<T: FieldType>(&self, f: Field<L, T>) -> T::Value {
        const {
            assert!(
                !L::DESC.provisional,
                "typed values only for layouts that are not provisional"
            )
        };
        T::from_bits(self.get(f))
    }
    /// The bytes of a byte-aligned field (MAC and GID fields, keys, wide values).
    ///
    /// # Errors
    /// [`LayoutError::NotByteAligned`] for fields that do not start and end on a byte.
    pub fn get_bytes<T>(&self, f: Field<L, T>) -> Result<&'a [u8], LayoutError> {
        let r = byte_range(f)?;
        // The layout check keeps r inside SIZE_BYTES <= buf.len().
        self.buf.get(r).ok_or(LayoutError::TooShort {
            layout: L::DESC.name,
            need: L::SIZE_BYTES,
            got: self.buf.len(),
        })
    }
    /// View of a nested layout.
    pub fn nested<M: Layout>(&self, n: Nested<L, M>) -> View<'a, M> {
        let start = (n.offset / 8) as usize;
        // M lies inside L by the layout check, and nested layouts start on a dword in practice;
        // a non-byte-aligned nesting would be a declaration error caught by the tests.
        View {
            buf: self.buf.get(start..).unwrap_or(&[]),
            _l: PhantomData,
        }
    }
    /// Number of complete flexible-array elements present in the buffer.
    pub fn flex_len(&self, a: FlexArray<L>) -> usize {
        (self.buf.len() - L::SIZE_BYTES) / a.elem_bytes.max(1)
    }
    /// Element `i` of the flexible trailing array (big-endian, up to 8 bytes).
    ///
    /// # Errors
    /// [`LayoutError::FlexOutOfRange`] when the buffer ends before the element.
    pub fn flex_get(&self, a: FlexArray<L>, i: usize) -> Result<u64, LayoutError> {
        let (s, e) = a.range(i);
        let b = self.buf.get(s..e).ok_or(LayoutError::FlexOutOfRange {
            layout: L::DESC.name,
            index: i,
            len: self.buf.len(),
        })?;
        Ok(b.iter()
            .take(8)
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }
}

/// A writable view of layout `L` over a byte buffer at least `L::SIZE_BYTES` long.
pub struct ViewMut<'a, L> {
    buf: &'a mut [u8],
    _l: PhantomData<fn() -> L>,
}

impl<'a, L: Layout> ViewMut<'a, L> {
    /// Checks the length once; afterwards no accessor panics.
    ///
    /// # Errors
    /// [`LayoutError::TooShort`] when `buf` is shorter than the layout.
    pub fn new(buf: &'a mut [u8]) -> Result<Self, LayoutError> {
        check_len::<L>(buf.len())?;
        Ok(Self {
            buf,
            _l: PhantomData,
        })
    }
    /// The whole underlying buffer (including any flexible tail).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf
    }
    /// Read-only view of the same bytes.
    pub fn as_view(&self) -> View<'_, L> {
        View {
            buf: self.buf,
            _l: PhantomData,
        }
    }
    /// Value of a field (see [`View::get`]).
    pub fn get<T>(&self, f: Field<L, T>) -> u64 {
        self.as_view().get(f)
    }
    /// Value of a field as its width's own type (see [`View::value`]).
    pub fn value<T: FieldType>(&self, f: Field<L, T>) -> T::Value {
        self.as_view().value(f)
    }
    /// Writes a value of the field's declared type (an integer of its width, or an
    /// enumeration); it always fits.
    pub fn set_value<T: FieldType>(&mut self, f: Field<L, T>, value: T) {
        self.set(f, value.to_bits());
    }
    /// Writes the low `width` bits of `value`; bits of `value` above the width are dropped.
    /// No bit outside the field changes. Use [`ViewMut::try_set`] for values from users.
    pub fn set<T>(&mut self, f: Field<L, T>, value: u64) {
        let f = f.resolved();
        if f.width > 64 {
            // Wide field: clear it, then write the value into its low 64 bits.
            if let Ok(r) = byte_range(f) {
                if let Some(b) = self.buf.get_mut(r) {
                    b.fill(0);
                }
            }
            write_bits(self.buf, f.offset + f.width - 64, 64, value);
            return;
        }
        write_bits(self.buf, f.offset, f.width, value);
    }
    /// Writes `value`, or fails if it does not fit the field.
    ///
    /// # Errors
    /// [`LayoutError::ValueTooWide`] when `value > f.max()`.
    pub fn try_set<T>(&mut self, f: Field<L, T>, value: u64) -> Result<(), LayoutError> {
        let f = f.resolved();
        if value > f.max() {
            return Err(LayoutError::ValueTooWide {
                layout: L::DESC.name,
                offset: f.offset,
                width: f.width,
                value,
            });
        }
        self.set(f, value);
        Ok(())
    }
    /// Copies `src` into a byte-aligned field, right-aligned (a shorter `src` fills the low
    /// bytes and the rest is zeroed).
    ///
    /// # Errors
    /// [`LayoutError::NotByteAligned`]; [`LayoutError::ValueTooWide`] when `src` is longer than
    /// the field.
    pub fn set_bytes<T>(&mut self, f: Field<L, T>, src: &[u8]) -> Result<(), LayoutError> {
        let r = byte_range(f)?;
        let len = r.len();
        if src.len() > len {
            return Err(LayoutError::ValueTooWide {
                layout: L::DESC.name,
                offset: f.offset,
                width: f.width,
                value: src.len() as u64,
            });
        }
        let dst = self.buf.get_mut(r).ok_or(LayoutError::TooShort {
            layout: L::DESC.name,
            need: L::SIZE_BYTES,
            got: 0,
        })?;
        let pad = len - src.len();
        dst[..pad].fill(0);
        dst[pad..].copy_from_slice(src);
        Ok(())
    }
    /// Writable view of a nested layout.
    pub fn nested<M: Layout>(&mut self, n: Nested<L, M>) -> ViewMut<'_, M> {
        let start = (n.offset / 8) as usize;
        ViewMut {
            buf: self.buf.get_mut(start..).unwrap_or(&mut []),
            _l: PhantomData,
        }
    }
    /// Writes element `i` of the flexible trailing array (big-endian).
    ///
    /// # Errors
    /// [`LayoutError::FlexOutOfRange`] when the buffer ends before the element.
    pub fn flex_set(&mut self, a: FlexArray<L>, i: usize, value: u64) -> Result<(), LayoutError> {
        let (s, e) = a.range(i);
        let len = self.buf.len();
        let b = self.buf.get_mut(s..e).ok_or(LayoutError::FlexOutOfRange {
            layout: L::DESC.name,
            index: i,
            len,
        })?;
        let n = b.len();
        for (k, byte) in b.iter_mut().enumerate() {
            let shift = 8 * (n - 1 - k);
            *byte = if shift < 64 {
                (value >> shift) as u8
            } else {
                0
            };
        }
        Ok(())
    }
}

/// Declares a PRM layout; see the [module documentation](crate::mlx5::layout).
#[macro_export]
macro_rules! layout {
    (
        $(#[doc = $doc:literal])*
        $(#[provisional = $why:literal])?
        $vis:vis $name:ident : $size:literal {
            $( $(#[$fmeta:meta])* $field:ident @ $off:literal : $spec:tt $(as $enum:ty)? ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        $(#[doc = ""] #[doc = concat!("**Provisional:** ", $why)])?
        #[allow(non_camel_case_types, non_upper_case_globals, dead_code, clippy::all)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            /// Marker type of this layout.
            #[derive(Debug, Clone, Copy)]
            pub struct Layout;
            impl $crate::mlx5::layout::Layout for Layout {
                const DESC: $crate::mlx5::layout::LayoutDesc = $crate::mlx5::layout::LayoutDesc {
                    name: stringify!($name),
                    size_bits: $size,
                    provisional: $crate::layout!(@prov $($why)?),
                    fields: &[ $( $crate::layout!(@desc $field, $off, $spec) ),* ],
                };
            }
            const _: () = $crate::mlx5::layout::check_layout(
                &<Layout as $crate::mlx5::layout::Layout>::DESC,
            );
            $(
                $(#[$fmeta])*
                pub const $field: $crate::layout!(@ty $spec $(as $enum)?) = $crate::layout!(@val $off, $spec);
                $( const _: () = assert!(
                    $spec <= <$enum as $crate::mlx5::layout::FieldType>::BITS,
                    "the enumeration is narrower than its field"
                ); )?
            )*
        }
    };
    (@prov) => { false };
    (@prov $why:literal) => { true };

    // Field descriptors.
    (@desc $f:ident, $off:literal, [$w:literal; flex]) => {
        $crate::mlx5::layout::FieldDesc { name: stringify!($f), offset: $off, width: 0,
            kind: $crate::mlx5::layout::FieldKind::Array { count: 0, elem_width: $w } }
    };
    (@desc $f:ident, $off:literal, [$w:literal; $n:literal]) => {
        $crate::mlx5::layout::FieldDesc { name: stringify!($f), offset: $off, width: $w * $n,
            kind: $crate::mlx5::layout::FieldKind::Array { count: $n, elem_width: $w } }
    };
    (@desc $f:ident, $off:literal, [$l:ident; $n:literal]) => {
        $crate::mlx5::layout::FieldDesc { name: stringify!($f), offset: $off,
            width: <super::$l::Layout as $crate::mlx5::layout::Layout>::DESC.size_bits * $n,
            kind: $crate::mlx5::layout::FieldKind::NestedArray { count: $n,
                elem: &<super::$l::Layout as $crate::mlx5::layout::Layout>::DESC } }
    };
    (@desc $f:ident, $off:literal, $w:literal) => {
        $crate::mlx5::layout::FieldDesc { name: stringify!($f), offset: $off, width: $w,
            kind: $crate::mlx5::layout::FieldKind::Scalar }
    };
    (@desc $f:ident, $off:literal, $l:ident) => {
        $crate::mlx5::layout::FieldDesc { name: stringify!($f), offset: $off,
            width: <super::$l::Layout as $crate::mlx5::layout::Layout>::DESC.size_bits,
            kind: $crate::mlx5::layout::FieldKind::Nested(
                &<super::$l::Layout as $crate::mlx5::layout::Layout>::DESC) }
    };

    // Field constant types.
    (@ty [$w:literal; flex]) => { $crate::mlx5::layout::FlexArray<Layout> };
    (@ty [$w:literal; $n:literal]) => { $crate::mlx5::layout::ArrayField<Layout> };
    (@ty [$l:ident; $n:literal]) => { $crate::mlx5::layout::NestedArray<Layout, super::$l::Layout> };
    (@ty $w:literal) => {
        $crate::mlx5::layout::Field<Layout, <$crate::mlx5::layout::Bits<$w> as $crate::mlx5::layout::Width>::Type>
    };
    (@ty $l:ident) => { $crate::mlx5::layout::Nested<Layout, super::$l::Layout> };
    (@ty $w:literal as $e:ty) => { $crate::mlx5::layout::Field<Layout, $e> };

    // Field constant values.
    (@val $off:literal, [$w:literal; flex]) => { $crate::mlx5::layout::FlexArray::__new($w) };
    (@val $off:literal, [$w:literal; $n:literal]) => {
        $crate::mlx5::layout::ArrayField::__new($off, $w, $n)
    };
    (@val $off:literal, [$l:ident; $n:literal]) => {
        $crate::mlx5::layout::NestedArray::__new($off, $n)
    };
    (@val $off:literal, $w:literal) => { $crate::mlx5::layout::Field::__new($off, $w) };
    (@val $off:literal, $l:ident) => { $crate::mlx5::layout::Nested::__new($off) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field reads as its width's own type: bool for one bit, u8 up to 8, u16 up to 16, u32
    /// up to 32, u64 above; the value is the same as `get`'s.
    #[test]
    fn fields_read_as_their_widths_type() {
        use crate::mlx5::layouts::cqc;
        let mut b = vec![0u8; cqc::Layout::SIZE_BYTES];
        let mut v = ViewMut::<cqc::Layout>::new(&mut b).unwrap();
        v.set(cqc::dbr_umem_valid, 1);
        v.set(cqc::log_cq_size, 0x1f);
        v.set(cqc::cq_period, 0xabc);
        v.set(cqc::uar_page, 0xff_fffe);
        v.set(cqc::dbr_addr, 0x1234_5678_9abc_def0);
        let v = v.as_view();
        let valid: bool = v.value(cqc::dbr_umem_valid);
        let log: u8 = v.value(cqc::log_cq_size);
        let period: u16 = v.value(cqc::cq_period);
        let uar: u32 = v.value(cqc::uar_page);
        let dbr: u64 = v.value(cqc::dbr_addr);
        assert!(valid);
        assert_eq!(
            (u64::from(log), u64::from(period), u64::from(uar), dbr),
            (
                v.get(cqc::log_cq_size),
                v.get(cqc::cq_period),
                v.get(cqc::uar_page),
                v.get(cqc::dbr_addr)
            )
        );
        assert_eq!((log, period, uar), (0x1f, 0xabc, 0xff_fffe));
    }

    #[test]
    fn read_write_match_mlx5_ifc_numbering() {
        // log_cq_size at 0x63/5: bits 28..24 of dword 3 -> byte 12, low 5 bits.
        let mut b = [0u8; 16];
        write_bits(&mut b, 0x63, 5, 0x1f);
        assert_eq!(b[12], 0x1f);
        assert_eq!(read_bits(&b, 0x63, 5), 0x1f);
        // A field straddling bytes: 0x4/12 -> low nibble of byte 0 and byte 1.
        let mut b = [0u8; 4];
        write_bits(&mut b, 4, 12, 0xabc);
        assert_eq!(b, [0x0a, 0xbc, 0, 0]);
        // 64-bit unaligned field.
        let mut b = [0u8; 12];
        write_bits(&mut b, 4, 64, u64::MAX);
        assert_eq!(b[0], 0x0f);
        assert_eq!(b[8], 0xf0);
        assert_eq!(read_bits(&b, 4, 64), u64::MAX);
    }

    #[test]
    fn write_bits_changes_exactly_its_field_at_every_offset_and_width() {
        // Against a bit-at-a-time reference, over backgrounds of zeros and ones, for fields
        // inside one byte and whole aligned words (the fast paths) and across bytes.
        for background in [0x00u8, 0xff, 0xa5] {
            for offset in 0..24u32 {
                for width in 1..=64u32 {
                    let value = 0x9e37_79b9_7f4a_7c15u64.rotate_left(offset + width);
                    let mut got = [background; 12];
                    write_bits(&mut got, offset, width, value);
                    let mut want = [background; 12];
                    for k in 0..width {
                        let bit = offset + k;
                        let v = (value >> (width - 1 - k)) & 1;
                        let m = 0x80u8 >> (bit % 8);
                        let byte = &mut want[(bit / 8) as usize];
                        *byte = if v == 1 { *byte | m } else { *byte & !m };
                    }
                    assert_eq!(
                        got, want,
                        "offset {offset} width {width} over {background:#x}"
                    );
                    let mask = if width == 64 {
                        u64::MAX
                    } else {
                        (1 << width) - 1
                    };
                    assert_eq!(read_bits(&got, offset, width), value & mask);
                }
            }
        }
    }
}

/// Declarations that break a rule do not compile. Overlapping fields:
///
/// ```compile_fail
/// mlx5_dpa::layout! { pub bad: 0x20 { a @ 0x0 : 0x8, b @ 0x4 : 0x8 } }
/// ```
///
/// A field past the declared size:
///
/// ```compile_fail
/// mlx5_dpa::layout! { pub bad: 0x20 { a @ 0x18 : 0x10 } }
/// ```
///
/// A size that is not a whole number of dwords:
///
/// ```compile_fail
/// mlx5_dpa::layout! { pub bad: 0x30 { a @ 0x0 : 0x8 } }
/// ```
///
/// Fields out of order:
///
/// ```compile_fail
/// mlx5_dpa::layout! { pub bad: 0x40 { a @ 0x20 : 0x8, b @ 0x0 : 0x8 } }
/// ```
///
/// A nested layout that does not fit:
///
/// ```compile_fail
/// mod m {
///     mlx5_dpa::layout! { pub inner: 0x40 { a @ 0x0 : 0x8 } }
///     mlx5_dpa::layout! { pub outer: 0x40 { x @ 0x20 : inner } }
/// }
/// ```
///
/// The same declarations, corrected, compile:
///
/// ```
/// mod m {
///     mlx5_dpa::layout! { pub inner: 0x40 { a @ 0x0 : 0x8 } }
///     mlx5_dpa::layout! { pub outer: 0x60 { b @ 0x4 : 0x4, x @ 0x20 : inner } }
/// }
/// ```
#[cfg(doctest)]
pub struct CompileChecks;

// ---------------------------------------------------------------------------------------------
// Fields moved at run time (the table `super::overrides` checks and installs)

/// One moved field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Override {
    pub layout: &'static str,
    pub field: &'static str,
    /// The declared position (bit offset, width).
    pub from: (u32, u32),
    /// The position it takes.
    pub to: (u32, u32),
}

/// Whether any change is installed: the fast check of every provisional view.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static TABLE: RwLock<Vec<Override>> = RwLock::new(Vec::new());

/// `desc`'s fields with `set` applied, in ascending offset order.
pub(crate) fn moved_fields(desc: &LayoutDesc, set: &[Override]) -> Vec<FieldDesc> {
    let mut fields: Vec<FieldDesc> = desc
        .fields
        .iter()
        .map(|f| {
            match set
                .iter()
                .find(|o| o.layout == desc.name && o.field == f.name)
            {
                Some(o) => FieldDesc {
                    offset: o.to.0,
                    width: o.to.1,
                    ..*f
                },
                None => *f,
            }
        })
        .collect();
    fields.sort_by_key(|f| f.offset);
    fields
}

/// Installs a set (replacing any installed before); `super::overrides` checks it first.
pub(crate) fn install_moved(set: Vec<Override>) {
    let active = !set.is_empty();
    *TABLE.write().unwrap_or_else(|e| e.into_inner()) = set;
    ACTIVE.store(active, Ordering::Release);
}

/// The installed changes.
pub fn installed() -> Vec<Override> {
    if !ACTIVE.load(Ordering::Acquire) {
        return Vec::new();
    }
    TABLE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The position of a field of a provisional layout: moved, or as declared.
#[inline]
pub(crate) fn resolve(layout: &'static str, offset: u32, width: u32) -> (u32, u32) {
    if !ACTIVE.load(Ordering::Acquire) {
        return (offset, width);
    }
    TABLE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|o| o.layout == layout && o.from == (offset, width))
        .map_or((offset, width), |o| o.to)
}

/// `desc`'s fields as they stand: with the installed changes, in offset order.
pub fn effective_fields(desc: &LayoutDesc) -> Cow<'static, [FieldDesc]> {
    if !desc.provisional || !ACTIVE.load(Ordering::Acquire) {
        return Cow::Borrowed(desc.fields);
    }
    let table = TABLE.read().unwrap_or_else(|e| e.into_inner());
    if !table.iter().any(|o| o.layout == desc.name) {
        return Cow::Borrowed(desc.fields);
    }
    Cow::Owned(moved_fields(desc, &table))
}
