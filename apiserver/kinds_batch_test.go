package apiserver

import (
	"net/http"
	"testing"
)

// TestBatchKinds checks the defaults and validation of batch/v1 Jobs and
// CronJobs.
func TestBatchKinds(t *testing.T) {
	const jobs = "/apis/batch/v1/namespaces/default/jobs"
	const cronjobs = "/apis/batch/v1/namespaces/default/cronjobs"
	pod := `"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}`
	runKindCases(t, []kindCase{
		{name: "job defaults and generated selector", path: jobs, code: http.StatusCreated,
			body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{` + pod + `}},"status":{"active":3}}`,
			want: []string{`"backoffLimit":6`, `"completionMode":"NonIndexed"`, `"completions":1`, `"manualSelector":false`, `"parallelism":1`,
				`"podReplacementPolicy":"TerminatingOrFailed"`, `"suspend":false`, `"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"`,
				`"labels":{"batch.kubernetes.io/controller-uid":"`, `"job-name":"j"`, `"status":{}`}},
		{name: "job parallelism only", path: jobs, code: http.StatusCreated,
			body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"p"},"spec":{"parallelism":3,"podFailurePolicy":{"rules":[]},"template":{` + pod + `}}}`,
			want: []string{`"parallelism":3`, `"podReplacementPolicy":"Failed"`}},
		{name: "job restart policy", path: jobs, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			want: []string{`spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"`}},
		{name: "job selector immutable", method: http.MethodPatch, path: jobs + "/j", body: `{"spec":{"selector":{"matchLabels":{"x":"y"}}}}`,
			code: http.StatusUnprocessableEntity, want: []string{`\"x\":\"y\"}}: field is immutable","field":"spec.selector"`}},
		{name: "job template immutable", method: http.MethodPatch, path: jobs + "/j", body: `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"other"}]}}}}`,
			code: http.StatusUnprocessableEntity, want: []string{`"field":"spec.template"`}},
		{name: "job failed counter", method: http.MethodPatch, path: jobs + "/j/status", body: `{"status":{"failed":2}}`, code: http.StatusOK},
		{name: "job failed counter decreased", method: http.MethodPatch, path: jobs + "/j/status", body: `{"status":{"failed":1}}`,
			code: http.StatusUnprocessableEntity, want: []string{`cannot decrease the failed counter`}},
		{name: "job field selector", method: http.MethodGet, path: jobs + "?fieldSelector=status.successful%3D0", code: http.StatusOK, want: []string{`"name":"j"`, `"name":"p"`}},
		{name: "cronjob defaults", path: cronjobs, code: http.StatusCreated,
			body: `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{` + pod + `}}}}}`,
			want: []string{`"concurrencyPolicy":"Allow"`, `"failedJobsHistoryLimit":1`, `"successfulJobsHistoryLimit":3`, `"suspend":false`, `"generation":1`, `"status":{}`}},
		{name: "cronjob schedule", method: http.MethodPatch, path: cronjobs + "/c", body: `{"spec":{"schedule":"* * *"}}`,
			code: http.StatusUnprocessableEntity, want: []string{`spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]`}},
		{name: "cronjob time zone", method: http.MethodPatch, path: cronjobs + "/c", body: `{"spec":{"timeZone":"Local"}}`,
			code: http.StatusUnprocessableEntity, want: []string{`timeZone must be an explicit time zone`}},
		{name: "cronjob selector", method: http.MethodPatch, path: cronjobs + "/c", body: `{"spec":{"jobTemplate":{"spec":{"selector":{"matchLabels":{"a":"b"}}}}}}`,
			code: http.StatusUnprocessableEntity, want: []string{"`selector` will be auto-generated"}},
	})
}
