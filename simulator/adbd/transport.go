package adbd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Transport commands (adb.h).
const (
	cmdCNXN = 0x4e584e43
	cmdAUTH = 0x48545541
	cmdOPEN = 0x4e45504f
	cmdOKAY = 0x59414b4f
	cmdWRTE = 0x45545257
	cmdCLSE = 0x45534c43
	cmdSTLS = 0x534c5453
)

// Protocol versions and payload limits (adb.h).
const (
	versionMin          = 0x01000000
	versionSkipChecksum = 0x01000001
	maxPayloadV1        = 4 << 10
	maxPayload          = 1 << 20
)

// message is one transport message: a 24-byte header and its payload.
type message struct {
	cmd, arg0, arg1 uint32
	data            []byte
}

func cmdName(c uint32) string {
	switch c {
	case cmdCNXN:
		return "CNXN"
	case cmdAUTH:
		return "AUTH"
	case cmdOPEN:
		return "OPEN"
	case cmdOKAY:
		return "OKAY"
	case cmdWRTE:
		return "WRTE"
	case cmdCLSE:
		return "CLSE"
	case cmdSTLS:
		return "STLS"
	}
	return fmt.Sprintf("0x%08x", c)
}

// readMessage reads one message. Like adb 29's check_header it rejects a bad
// magic and a payload longer than limit; checksums are not verified, as adb
// 29 does not verify them either.
func readMessage(r io.Reader, limit uint32) (message, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return message{}, err
	}
	m := message{
		cmd:  binary.LittleEndian.Uint32(h[0:]),
		arg0: binary.LittleEndian.Uint32(h[4:]),
		arg1: binary.LittleEndian.Uint32(h[8:]),
	}
	n := binary.LittleEndian.Uint32(h[12:])
	magic := binary.LittleEndian.Uint32(h[20:])
	if magic != m.cmd^0xffffffff {
		return message{}, fmt.Errorf("bad magic 0x%08x for command %s", magic, cmdName(m.cmd))
	}
	if n > limit {
		return message{}, fmt.Errorf("%s payload of %d bytes exceeds max %d", cmdName(m.cmd), n, limit)
	}
	if n > 0 {
		m.data = make([]byte, n)
		if _, err := io.ReadFull(r, m.data); err != nil {
			return message{}, errors.Join(errors.New("truncated payload"), err)
		}
	}
	return m, nil
}

// encodeMessage frames m. The checksum is the byte sum of the payload for
// peers older than versionSkipChecksum and 0 otherwise.
func encodeMessage(m message, version uint32) []byte {
	b := make([]byte, 24+len(m.data))
	binary.LittleEndian.PutUint32(b[0:], m.cmd)
	binary.LittleEndian.PutUint32(b[4:], m.arg0)
	binary.LittleEndian.PutUint32(b[8:], m.arg1)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(m.data)))
	if version < versionSkipChecksum {
		var sum uint32
		for _, c := range m.data {
			sum += uint32(c)
		}
		binary.LittleEndian.PutUint32(b[16:], sum)
	}
	binary.LittleEndian.PutUint32(b[20:], m.cmd^0xffffffff)
	copy(b[24:], m.data)
	return b
}
