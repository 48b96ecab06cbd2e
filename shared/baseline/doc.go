// Package baseline holds the algorithms HyFDCA is compared with (issue 6),
// run in one process on the same blocks and measured by the same primal
// objective P(w) = (1/N_train) sum_n l(y_n, x_n.w) + lambda/2 ||w||^2:
//
//   - FedAvg for hybrid data (the HyFDCA paper, sec. 2, the HyFDCA paper's supplement, sec. 2.3): every
//     active client runs H steps of SGD with batch 1 on its block, with its
//     local model on its own features only, step a/(b+sqrt(t)); the server
//     concatenates the blocks' models and averages each weight over the
//     clients that hold its feature.
//   - HyFEM-Avg and HyFEM-Prox (the HyFEM paper, sec. 3, Algorithm 1, Remark 3) for
//     linear models: the same local SGD, HyFEM-Prox with the penalty
//     mu ||w_k - Pi_k w_global||^2, and the global model averaged per feature.
//
// FedHybrid (the FedHybrid paper) lives in the same package (fedhybrid.go).
//
// The server's step is a sum, so it goes through package seal: every
// participant seals its local weights into the slots of its features, the
// server only adds sealed vectors, and a participant opens the sum and
// divides by the public number of holders. No participant's model is seen
// by the server in plaintext, and an encrypted run computes bit for bit what
// a run with the plaintext scheme does (sealed values are fixed point).
package baseline
