"""RESP file of N `SET key:<i> <value>` (i = 1..N, VLEN bytes of x) for `redis-cli --pipe`.

    python3 bench/gen-set-resp.py N VLEN OUT  (decision 0016)
"""
import sys
n=int(sys.argv[1]); vlen=int(sys.argv[2]); out=sys.argv[3]
v=b'x'*vlen
with open(out,'wb') as f:
    buf=[]
    for i in range(1,n+1):
        k=b'key:%d'%i
        buf.append(b'*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n'%(len(k),k,vlen,v))
        if len(buf)>=10000:
            f.write(b''.join(buf)); buf=[]
    f.write(b''.join(buf))
