//! What a code object is: its ELF machine, its flags and whether it defines a symbol.
//!
//! hiprtc returns an AMDGPU code object: a 64-bit little-endian ELF shared object whose kernels
//! appear in `.symtab` / `.dynsym` (`sinewave` as FUNC, `sinewave.kd` as its descriptor). The ELF
//! is read with the `object` crate (read-only, ELF only); this module adds the one container
//! `object` does not know: a clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`, what hipcc embeds
//! and what some hiprtc options produce), whose entries are searched one by one. Malformed input
//! answers `None` / `false`, never panics.

use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSymbol};

const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = object::elf::EM_AMDGPU.0;

fn usize_at(b: &[u8], off: usize) -> Option<usize> {
    let bytes: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    usize::try_from(u64::from_le_bytes(bytes)).ok()
}

/// `(e_machine, e_flags)` of an ELF64 object; for AMDGPU the low byte of `e_flags` is the
/// `EF_AMDGPU_MACH` of the target.
pub fn elf_machine_and_flags(b: &[u8]) -> Option<(u16, u32)> {
    let file = ElfFile64::<Endianness>::parse(b).ok()?;
    let header = file.elf_header();
    let endian = file.endian();
    Some((header.e_machine(endian).0, header.e_flags(endian).0))
}

/// Whether an ELF64 object defines `symbol` (in `.symtab` or `.dynsym`; undefined references do
/// not count). `None` when the bytes are not a readable ELF64 object.
fn elf_has_symbol(b: &[u8], symbol: &str) -> Option<bool> {
    let file = ElfFile64::<Endianness>::parse(b).ok()?;
    let defines = |s: object::read::elf::ElfSymbol64<'_, '_, Endianness, &[u8]>| {
        !s.is_undefined() && s.name_bytes() == Ok(symbol.as_bytes())
    };
    Some(file.symbols().any(defines) || file.dynamic_symbols().any(defines))
}

/// The entries of a clang offload bundle (uncompressed format).
fn bundle_entries(b: &[u8]) -> Option<Vec<&[u8]>> {
    if !b.starts_with(BUNDLE_MAGIC) {
        return None;
    }
    let count = usize_at(b, BUNDLE_MAGIC.len())?;
    let mut at = BUNDLE_MAGIC.len() + 8;
    let mut out = Vec::new();
    for _ in 0..count.min(1024) {
        let offset = usize_at(b, at)?;
        let size = usize_at(b, at.checked_add(8)?)?;
        let id_len = usize_at(b, at.checked_add(16)?)?;
        at = at.checked_add(24)?.checked_add(id_len)?;
        out.push(b.get(offset..offset.checked_add(size)?)?);
    }
    Some(out)
}

/// Whether `code` (an ELF code object, or an offload bundle of them) defines `symbol`.
pub fn code_object_has_symbol(code: &[u8], symbol: &str) -> bool {
    if symbol.is_empty() {
        return false;
    }
    if let Some(entries) = bundle_entries(code) {
        return entries.iter().any(|e| elf_has_symbol(e, symbol) == Some(true));
    }
    elf_has_symbol(code, symbol) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
    const ELFCLASS64: u8 = 2;
    const ELFDATA2LSB: u8 = 1;
    const SHT_SYMTAB: u32 = 2;
    const SHN_UNDEF: u16 = 0;

    /// A minimal ELF64 LE: null section, .strtab, .symtab with one defined symbol and one
    /// undefined one.
    fn tiny_elf(defined: &str, undefined: &str) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let def_off = strtab.len() as u32;
        strtab.extend_from_slice(defined.as_bytes());
        strtab.push(0);
        let undef_off = strtab.len() as u32;
        strtab.extend_from_slice(undefined.as_bytes());
        strtab.push(0);
        let mut symtab = vec![0u8; 24]; // null symbol
        for (name, shndx) in [(def_off, 1u16), (undef_off, SHN_UNDEF)] {
            let mut s = vec![0u8; 24];
            s[0..4].copy_from_slice(&name.to_le_bytes());
            s[4] = 0x12; // GLOBAL FUNC
            s[6..8].copy_from_slice(&shndx.to_le_bytes());
            symtab.extend(s);
        }
        let strtab_off = 64usize;
        let symtab_off = strtab_off + strtab.len();
        let shoff = symtab_off + symtab.len();
        let mut b = vec![0u8; 64];
        b[0..4].copy_from_slice(ELF_MAGIC);
        b[4] = ELFCLASS64;
        b[5] = ELFDATA2LSB;
        b[6] = 1; // EV_CURRENT
        b[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
        b[20..24].copy_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
        b[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        b[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        b[48..52].copy_from_slice(&0x3fu32.to_le_bytes());
        b[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&3u16.to_le_bytes());
        b[62..64].copy_from_slice(&1u16.to_le_bytes()); // e_shstrndx: .strtab names the sections
        b.extend(&strtab);
        b.extend(&symtab);
        let mut sh = |kind: u32, off: usize, size: usize, link: u32, ent: u64| {
            let mut s = vec![0u8; 64];
            s[4..8].copy_from_slice(&kind.to_le_bytes());
            s[24..32].copy_from_slice(&(off as u64).to_le_bytes());
            s[32..40].copy_from_slice(&(size as u64).to_le_bytes());
            s[40..44].copy_from_slice(&link.to_le_bytes());
            s[56..64].copy_from_slice(&ent.to_le_bytes());
            b.extend(s);
        };
        sh(0, 0, 0, 0, 0);
        sh(3, strtab_off, strtab.len(), 0, 0);
        sh(SHT_SYMTAB, symtab_off, symtab.len(), 1, 24);
        b
    }

    #[test]
    fn finds_defined_symbols_only() {
        let elf = tiny_elf("sinewave", "external_thing");
        assert!(code_object_has_symbol(&elf, "sinewave"));
        assert!(!code_object_has_symbol(&elf, "external_thing"), "undefined symbols do not count");
        assert!(!code_object_has_symbol(&elf, "sine"), "no prefix matches");
        assert!(!code_object_has_symbol(&elf, ""));
        assert_eq!(elf_machine_and_flags(&elf), Some((EM_AMDGPU, 0x3f)));
    }

    #[test]
    fn malformed_input_is_false_not_a_panic() {
        let elf = tiny_elf("sinewave", "x");
        for cut in [0, 3, 16, 63, 64, 70, elf.len() - 1] {
            assert!(!code_object_has_symbol(&elf[..cut], "sinewave"), "cut at {cut}");
        }
        let mut bad = elf.clone();
        bad[40..48].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff out of range
        assert!(!code_object_has_symbol(&bad, "sinewave"));
        assert!(!code_object_has_symbol(b"not an elf at all", "sinewave"));
    }

    #[test]
    fn opens_offload_bundles() {
        let elf = tiny_elf("sinewave", "x");
        let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a";
        let header_len = BUNDLE_MAGIC.len() + 8 + 24 + id.len();
        let mut b = BUNDLE_MAGIC.to_vec();
        b.extend(1u64.to_le_bytes());
        b.extend((header_len as u64).to_le_bytes());
        b.extend((elf.len() as u64).to_le_bytes());
        b.extend((id.len() as u64).to_le_bytes());
        b.extend(id);
        b.extend(&elf);
        assert!(code_object_has_symbol(&b, "sinewave"));
        assert!(!code_object_has_symbol(&b, "cosine"));
        assert!(!code_object_has_symbol(&b[..b.len() - 10], "sinewave"));
    }
}
