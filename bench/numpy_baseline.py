#!/usr/bin/python3
"""The same single-head analysis as `epar scale`, written the way a researcher would in vectorised NumPy.

    S = Q K^T / sqrt(d);  S' = S * P (P the EPAR enhanced effect, an L x L matrix);  A = softmax(S' / T)
    V = A I;  pos* = argmax V;  H_i = -sum_j A_ij ln A_ij;  D_i = sum_j A_ij |i-j|

Inputs (Q, K, I) are drawn beforehand and are not timed; the timed part is the analysis only, as in
`epar scale`. NumPy's default dtype (float64) is used unless --dtype float32. Prints one CSV row:
length,hidden,dtype,seconds,pos_star,mean_entropy   (seconds = median of --repeats)
"""
import argparse
import sys
import time

import numpy as np


def analysis(Q, K, I, alpha, beta, gamma, temperature):
    L, d = Q.shape
    S = (Q @ K.T) / np.sqrt(d)
    idx = np.arange(L)
    dist = np.abs(idx[:, None] - idx[None, :]).astype(Q.dtype)
    P = alpha * (1 + gamma * np.exp(-beta * dist / L)) / (1 + gamma)
    Z = S * P / temperature
    Z -= Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    A = E / E.sum(axis=1, keepdims=True)
    V = A @ I
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.sum(np.where(A > 0, A * np.log(A), 0.0), axis=1)
    D = (A * dist).sum(axis=1)
    return int(np.argmax(V)), float(H.mean()), float(D.mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--length", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.length < 1 or a.hidden < 1 or a.repeats < 1:
        sys.exit("numpy_baseline: length, hidden and repeats must be >= 1")
    rng = np.random.default_rng(a.seed)
    dt = np.dtype(a.dtype)
    # the reference's model: x = X + E, q = x Wq^T + bq, k = x Wk^T + bk, I_j = ||X_j||
    L, D = a.length, a.hidden
    X = rng.standard_normal((L, D))
    E = rng.standard_normal((L, D))
    bound = 1 / np.sqrt(D)
    Wq, Wk = rng.uniform(-bound, bound, (D, D)), rng.uniform(-bound, bound, (D, D))
    bq, bk = rng.uniform(-bound, bound, D), rng.uniform(-bound, bound, D)
    Q = ((X + E) @ Wq.T + bq).astype(dt)
    K = ((X + E) @ Wk.T + bk).astype(dt)
    I = np.linalg.norm(X, axis=1).astype(dt)
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        pos, h, _ = analysis(Q, K, I, 1.0, 2.0, 1.5, 1.0)   # reference_code preset: alpha 1, beta 2, gamma 1.5
        times.append(time.perf_counter() - t0)
    print("length,hidden,dtype,seconds,pos_star,mean_entropy")
    print(f"{L},{D},{a.dtype},{float(np.median(times)):.6g},{pos},{h:.9g}")


if __name__ == "__main__":
    main()
