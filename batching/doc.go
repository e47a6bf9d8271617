// Package batching stacks concurrent inference requests on one model
// version into one execution, as Triton's dynamic batcher does: requests
// whose inputs agree in every dimension but the first are concatenated
// along dimension 0, the model runs once on the stack, and each request
// gets back its own rows of every output. A batch-1 product streams every
// weight once per request; a batch of 32 streams them once for all 32.
//
// # Configuration
//
// Config carries Triton's model-configuration fields: MaxBatchSize (0:
// the model does not batch; otherwise dimension 0 of every input and
// output is the batch dimension) and, under dynamic_batching,
// MaxQueueDelay, PreferredBatchSizes and MaxQueueSize. As in Triton, a
// model batches only when MaxBatchSize > 0 and dynamic batching is on.
//
// # Scheduling
//
// Requests queue in arrival order. When an execution instance is free
// (Config.Instances, default GOMAXPROCS), the scheduler takes the oldest
// request and the requests after it whose inputs stack with it, up to
// MaxBatchSize rows. It sends that batch at once when it is full, when it
// reaches a preferred size (the largest one it can), or when the oldest
// request has waited MaxQueueDelay; otherwise it waits for more. While
// executions run, new requests gather in the queue, so the batch size
// follows the load even with no delay. With the default instances, a
// batch that is neither full nor of a preferred size also waits until no
// other execution runs: an execution already spreads over the engine's
// cores, and one batch of all the waiting requests streams the weights
// once where several smaller ones running side by side stream them each. A request of more rows than
// MaxBatchSize, or one that cannot be stacked (a missing input, a wrong
// datatype or shape: the model's own error is then the answer), runs
// alone, at once, on its caller's goroutine. A queue of MaxQueueSize
// waiting requests refuses the next with ErrQueueFull.
//
// # Guarantees
//
//   - Results are bit-identical to running each request alone, for models
//     that keep the rows of dimension 0 apart (the contract below): every
//     product quantizes its activations per row and accumulates each row in
//     the same order whatever the row count (package gemm).
//   - A request whose context ends (cancelled, past its deadline) leaves
//     the queue, or its batch, at once and returns the context's error; the
//     batch runs on for the others. The batch's own context ends only when
//     all its requests have left.
//   - A batch runs in its first request's trace: under a span
//     "batching.execute", a child of that request's span, linked to the
//     spans of the batch's other requests. It takes no deadline and no
//     other value from any request. A request that runs alone, or as a
//     batch of one on its caller's goroutine, runs under its own context.
//   - A batch that fails (a value in one request that the model refuses, a
//     panic in an operator) is not the answer of any request: each request
//     then runs alone, on its own goroutine, and gets its own answer or
//     error, exactly as without batching.
//   - The batcher holds no goroutine while its queue is empty: nothing has
//     to be stopped when a model is unloaded.
//
// # The contract of max_batch_size
//
// A model configured with MaxBatchSize > 0 promises that row i of every
// output depends only on row i of every input. Operators that mix rows of
// dimension 0 (BatchNormalization in training mode, reductions over axis
// 0, a Reshape or Transpose that moves the batch dimension, anything
// reading Shape()[0] into values) break it. Check guards the promise at
// load: the model's inputs and outputs must have a dynamic first
// dimension, and a batch of three generated rows must give, bit for bit,
// what the three rows give alone. At run time every output of a batch
// must have the batch's rows in its first dimension; a model that breaks
// this stops batching (its requests run alone) and Stats reports it.
package batching
