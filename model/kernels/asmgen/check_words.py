#!/usr/bin/env python3
# Checks that every "WORD $x // mnemonic" line of the given .s files decodes
# to its comment with aarch64-linux-gnu-objdump.
# Check every "WORD $x // mnem" line of the given .s files against objdump.
import re,subprocess,sys,struct,tempfile
bad=0
for f in sys.argv[1:]:
    for line in open(f):
        m=re.search(r'WORD \$(0x[0-9a-fA-F]+) // (.*)',line)
        if not m: continue
        v=int(m.group(1),16); want=m.group(2).strip().lower()
        with tempfile.NamedTemporaryFile(suffix='.bin') as t:
            t.write(struct.pack('<I',v)); t.flush()
            out=subprocess.run(['aarch64-linux-gnu-objdump','-D','-b','binary','-m','aarch64',t.name],capture_output=True,text=True).stdout
        got=' '.join(out.strip().splitlines()[-1].split('\t')[2:]).strip().lower()
        norm=lambda s: re.sub(r'\s+',' ',s.replace('v','v')).replace(' ,',',')
        if norm(got)!=norm(want):
            print(f"{f}: {v:#x}: comment '{want}' but objdump '{got}'"); bad+=1
print("bad",bad)
sys.exit(1 if bad else 0)
