//! Just enough ELF to ask a code object whether it defines a symbol.
//!
//! hiprtc returns an AMDGPU code object: a 64-bit little-endian ELF shared object whose kernels
//! appear in `.symtab` / `.dynsym` (`sinewave` as FUNC, `sinewave.kd` as its descriptor).
//! A clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`, what hipcc embeds and what some hiprtc
//! options produce) is opened and each entry searched. Every read is bounds-checked: malformed
//! input answers `false`, never panics.

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHN_UNDEF: u16 = 0;
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off.checked_add(8)?)?.try_into().ok()?))
}

fn usize_at(b: &[u8], off: usize) -> Option<usize> {
    usize::try_from(u64_at(b, off)?).ok()
}

struct Section {
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
    entsize: usize,
}

fn section(b: &[u8], shoff: usize, shentsize: usize, i: usize) -> Option<Section> {
    let base = shoff.checked_add(shentsize.checked_mul(i)?)?;
    let at = |field: usize| base.checked_add(field);
    Some(Section {
        kind: u32_at(b, at(4)?)?,
        offset: usize_at(b, at(24)?)?,
        size: usize_at(b, at(32)?)?,
        link: u32_at(b, at(40)?)?,
        entsize: usize_at(b, at(56)?)?,
    })
}

/// `(e_machine, e_flags)` of an ELF64 LE object; for AMDGPU the low byte of `e_flags` is the
/// `EF_AMDGPU_MACH` of the target.
pub fn elf_machine_and_flags(b: &[u8]) -> Option<(u16, u32)> {
    if b.get(0..4)? != ELF_MAGIC || *b.get(4)? != ELFCLASS64 || *b.get(5)? != ELFDATA2LSB {
        return None;
    }
    Some((u16_at(b, 18)?, u32_at(b, 48)?))
}

fn elf_has_symbol(b: &[u8], symbol: &[u8]) -> Option<bool> {
    elf_machine_and_flags(b)?;
    let shoff = usize_at(b, 40)?;
    let shentsize = usize::from(u16_at(b, 58)?);
    let shnum = usize::from(u16_at(b, 60)?);
    if shentsize < 64 {
        return None;
    }
    for i in 0..shnum {
        let s = section(b, shoff, shentsize, i)?;
        if s.kind != SHT_SYMTAB && s.kind != SHT_DYNSYM {
            continue;
        }
        let strtab = section(b, shoff, shentsize, usize::try_from(s.link).ok()?)?;
        let strings = b.get(strtab.offset..strtab.offset.checked_add(strtab.size)?)?;
        let entsize = if s.entsize == 0 { 24 } else { s.entsize };
        if entsize < 24 {
            return None;
        }
        let table = b.get(s.offset..s.offset.checked_add(s.size)?)?;
        for sym in table.chunks_exact(entsize) {
            let name_off = usize::try_from(u32_at(sym, 0)?).ok()?;
            let shndx = u16_at(sym, 6)?;
            if shndx == SHN_UNDEF {
                continue;
            }
            let name = strings.get(name_off..)?;
            let end = name.iter().position(|&c| c == 0)?;
            if &name[..end] == symbol {
                return Some(true);
            }
        }
    }
    Some(false)
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
        return entries.iter().any(|e| elf_has_symbol(e, symbol.as_bytes()) == Some(true));
    }
    elf_has_symbol(code, symbol.as_bytes()) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        b[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        b[48..52].copy_from_slice(&0x3fu32.to_le_bytes());
        b[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&3u16.to_le_bytes());
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
