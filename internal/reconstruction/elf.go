package reconstruction

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// SharedObject returns a minimal ELF64 x86-64 shared object whose dynamic
// section names soname (DT_SONAME) and needs each of needed (DT_NEEDED, in
// order). It has no code: it stands in for a plugin library whose only
// facts tcpxogen reads are its dynamic-section entries, and the bytes
// depend only on the arguments, so a reconstruction's digest stays
// reproducible. The layout is the one a linker writes, reduced: ELF
// header, a PT_LOAD and a PT_DYNAMIC program header, .dynstr, .dynamic,
// .shstrtab and the section headers (debug/elf finds the dynamic section
// through them).
func SharedObject(soname string, needed []string) ([]byte, error) {
	for _, s := range append([]string{soname}, needed...) {
		if s == "" || strings.ContainsRune(s, 0) {
			return nil, fmt.Errorf("shared object %q: soname %q is empty or holds a NUL byte", soname, s)
		}
	}
	const (
		ehsize, phentsize, shentsize, dynentsize = 64, 56, 64, 16
		phnum, shnum                             = 2, 4
	)
	le := binary.LittleEndian

	// .dynstr: a leading NUL, then each name once.
	dynstr := []byte{0}
	offsets := map[string]uint64{}
	for _, s := range append([]string{soname}, needed...) {
		if _, ok := offsets[s]; !ok {
			offsets[s] = uint64(len(dynstr))
			dynstr = append(append(dynstr, s...), 0)
		}
	}
	dynstrOff := uint64(ehsize + phnum*phentsize)
	dynOff := align8(dynstrOff + uint64(len(dynstr)))

	type dyn struct {
		tag elf.DynTag
		val uint64
	}
	var dyns []dyn
	for _, n := range needed {
		dyns = append(dyns, dyn{elf.DT_NEEDED, offsets[n]})
	}
	dyns = append(dyns, dyn{elf.DT_SONAME, offsets[soname]}, dyn{elf.DT_STRTAB, dynstrOff},
		dyn{elf.DT_STRSZ, uint64(len(dynstr))}, dyn{elf.DT_NULL, 0})
	dynSize := uint64(len(dyns) * dynentsize)

	shstrtab := []byte("\x00.dynstr\x00.dynamic\x00.shstrtab\x00")
	shstrOff := dynOff + dynSize
	shOff := align8(shstrOff + uint64(len(shstrtab)))
	total := shOff + shnum*shentsize

	buf := make([]byte, total)
	// ELF header.
	copy(buf, elf.ELFMAG)
	buf[elf.EI_CLASS], buf[elf.EI_DATA], buf[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(buf[16:], uint16(elf.ET_DYN))
	le.PutUint16(buf[18:], uint16(elf.EM_X86_64))
	le.PutUint32(buf[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(buf[32:], ehsize) // e_phoff
	le.PutUint64(buf[40:], shOff)  // e_shoff
	le.PutUint16(buf[52:], ehsize)
	le.PutUint16(buf[54:], phentsize)
	le.PutUint16(buf[56:], phnum)
	le.PutUint16(buf[58:], shentsize)
	le.PutUint16(buf[60:], shnum)
	le.PutUint16(buf[62:], 3) // e_shstrndx: .shstrtab

	// Program headers: the whole file loaded read-only at 0, and the dynamic segment.
	ph := func(i int, typ elf.ProgType, flags elf.ProgFlag, off, size, align uint64) {
		p := buf[ehsize+i*phentsize:]
		le.PutUint32(p[0:], uint32(typ))
		le.PutUint32(p[4:], uint32(flags))
		for _, f := range []struct {
			at int
			v  uint64
		}{{8, off}, {16, off}, {24, off}, {32, size}, {40, size}, {48, align}} {
			le.PutUint64(p[f.at:], f.v)
		}
	}
	ph(0, elf.PT_LOAD, elf.PF_R, 0, total, 0x1000)
	ph(1, elf.PT_DYNAMIC, elf.PF_R|elf.PF_W, dynOff, dynSize, 8)

	copy(buf[dynstrOff:], dynstr)
	for i, d := range dyns {
		le.PutUint64(buf[dynOff+uint64(i*dynentsize):], uint64(d.tag))
		le.PutUint64(buf[dynOff+uint64(i*dynentsize)+8:], d.val)
	}
	copy(buf[shstrOff:], shstrtab)

	// Section headers: null, .dynstr, .dynamic (linked to .dynstr), .shstrtab.
	sh := func(i int, name uint32, typ elf.SectionType, flags elf.SectionFlag, addr, off, size uint64, link uint32, align, entsize uint64) {
		s := buf[shOff+uint64(i*shentsize):]
		le.PutUint32(s[0:], name)
		le.PutUint32(s[4:], uint32(typ))
		le.PutUint64(s[8:], uint64(flags))
		le.PutUint64(s[16:], addr)
		le.PutUint64(s[24:], off)
		le.PutUint64(s[32:], size)
		le.PutUint32(s[40:], link)
		le.PutUint64(s[48:], align)
		le.PutUint64(s[56:], entsize)
	}
	sh(1, 1, elf.SHT_STRTAB, elf.SHF_ALLOC, dynstrOff, dynstrOff, uint64(len(dynstr)), 0, 1, 0)
	sh(2, 9, elf.SHT_DYNAMIC, elf.SHF_ALLOC|elf.SHF_WRITE, dynOff, dynOff, dynSize, 1, 8, dynentsize)
	sh(3, 18, elf.SHT_STRTAB, 0, 0, shstrOff, uint64(len(shstrtab)), 0, 1, 0)

	// Read it back: what this writes must be what extraction reads.
	f, err := elf.NewFile(bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("shared object %q: written ELF does not parse: %w", soname, err)
	}
	if got, err := f.DynString(elf.DT_NEEDED); err != nil || len(got) != len(needed) {
		return nil, fmt.Errorf("shared object %q: written ELF reads back %v, %v; want %v", soname, got, err, needed)
	}
	return buf, nil
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }
