// Package rest is kloop's one REST stack under the stages that talk to the
// API server — the client, the reflector's lister-watcher and the informer's
// discovery mapper — so that they read a rest.Config, decode errors and
// retry alike:
//
//   - [BaseURL] and [UserAgent]: the server's URL (with its path prefix)
//     and the User-Agent of a rest.Config, as client-go's REST client
//     derives them.
//   - [RateLimiter] and [Throttle]: the client-side rate limit of a
//     rest.Config (its RateLimiter, or a QPS/Burst token bucket), with
//     controller-runtime's reading of QPS 0: no limit.
//   - [ResponseError] and [DecodeError]: an error answer as a
//     *apierrors.StatusError — the Status the server sent, else a generic
//     one for the code — with a Retry-After header filling
//     Details.RetryAfterSeconds when the Status does not say.
//   - [ParseRetryAfter]: Retry-After as delay-seconds or an HTTP-date.
//   - [Unenvelope], [ForEachField] and [DecodeProtobufStatus]: answers in
//     Kubernetes' protobuf encoding, read without a scheme.
//   - [Retry] and [RetryWait]: client-go's retry of an answer 429 or 5xx
//     that carries a Retry-After, up to [MaxRetries] times.
//   - [Tracing]: OpenTelemetry spans of API calls, "<VERB> <resource>"
//     ([ParseCall] reads the call from the request), through a wrapping
//     round tripper; [WithSpanSink] hands a caller its call's span.
//
// It imports only the standard library, k8s.io/apimachinery, client-go's
// rest and flowcontrol packages, google.golang.org/protobuf's wire format
// and OpenTelemetry's trace API; it knows nothing of kloop's stages.
package rest
