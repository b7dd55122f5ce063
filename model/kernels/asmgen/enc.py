# AMX instruction encoder (VEX forms of the tile instructions the kernels use).
# AMX encoder: prints bytes for verification with objdump
regs={'rax':0,'rcx':1,'rdx':2,'rbx':3,'rsp':4,'rbp':5,'rsi':6,'rdi':7}
def vex(pp,vvvv,op,rest):
    b2=(0<<7)|((~vvvv&15)<<3)|(0<<2)|pp
    return [0xC4,0xE2,b2,op]+rest
def mem(treg,base,index,disp):
    if disp==0: mod=0; d=[]
    elif -128<=disp<128: mod=1; d=[disp&255]
    else: mod=2; d=[(disp>>(8*i))&255 for i in range(4)]
    return [(mod<<6)|(treg<<3)|4, (0<<6)|(regs[index]<<3)|regs[base]]+d
def tileloadd(t,base,index,disp=0): return vex(3,0,0x4B,mem(t,base,index,disp))
def tilestored(t,base,index,disp=0): return vex(2,0,0x4B,mem(t,base,index,disp))
def tilezero(t): return vex(3,0,0x49,[0xC0|(t<<3)])
def tdp(kind,dst,a,b):
    pp={'bssd':3,'bsud':2,'busd':1,'buud':0,'bf16ps':2}[kind]
    op=0x5C if kind=='bf16ps' else 0x5E
    return vex(pp,b,op,[0xC0|(dst<<3)|a])
if __name__ == '__main__':
    import sys
    tests=[('tileloadd 0(%rsi,%rdx)->t0',tileloadd(0,'rsi','rdx',0)),
    ('tileloadd 192(%rsi,%rdx)->t0',tileloadd(0,'rsi','rdx',192)),
    ('tileloadd 1024(%rdi,%rbx)->t1',tileloadd(1,'rdi','rbx',1024)),
    ('tileloadd 4096+1024(%rdi,%rbx)->t2',tileloadd(2,'rdi','rbx',5120)),
    ('tilestored t4 (%rcx,%rbx)',tilestored(4,'rcx','rbx',0)),
    ('tilestored t5 1024(%rcx,%rbx)',tilestored(5,'rcx','rbx',1024)),
    ('tilezero t4',tilezero(4)),('tilezero t5',tilezero(5)),
    ('tdpbsud t4,t0,t1',tdp('bsud',4,0,1)),('tdpbssd t5,t0,t2',tdp('bssd',5,0,2)),
    ('tdpbf16ps t2,t0,t1',tdp('bf16ps',2,0,1)),
    ]
    for name,bs in tests:
        print(name, ' '.join('%02X'%x for x in bs))
    with open('/tmp/enc.bin','wb') as f:
        for _,bs in tests: f.write(bytes(bs))
    