package apiserver

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// batch/v1 Jobs and CronJobs, after kube-apiserver v1.37's defaults
// (pkg/apis/batch/v1), strategies (pkg/registry/batch) and validation
// (pkg/apis/batch/validation). No controller runs them: a Job stays as
// written until its status is written.

func setupJob(k *kind) {
	k.orphanByDefault = true
	k.defaults = typedDefaults(defaultJob)
	k.strategyCreate = typedFunc(func(j *batchv1.Job) bool {
		// Decoding defaulted a Job without labels to its template's:
		// kube-apiserver's Job then shares the template's label map, so
		// that the generated labels land in both.
		shared := len(j.Labels) > 0 && maps.Equal(j.Labels, j.Spec.Template.Labels)
		if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
			generateJobSelector(j)
		}
		if shared {
			j.Labels = maps.Clone(j.Spec.Template.Labels)
		}
		// The stored Job is read back with its defaults, which copy the
		// template's labels into a Job without labels.
		if j.Spec.Template.Labels != nil && len(j.Labels) == 0 {
			j.Labels = j.Spec.Template.Labels
		}
		return true
	})
	k.validateCreate = typedValidation(validateGeneratedSelector)
	k.validate = typedValidation(func(j *batchv1.Job) field.ErrorList {
		spec := field.NewPath("spec")
		errs := validateJobSpec(&j.Spec, spec)
		errs = append(errs, validateSelector(j.Spec.Selector, j.Spec.Template.Labels, spec, "")...)
		errs = append(errs, validateJobStatus(&j.Status)...)
		return errs
	})
	k.validateUpdate = typedUpdateValidation(validateJobUpdate)
	k.warnings = func(obj map[string]any) []string {
		return nameDNSLabelWarning(jsontree.Str(obj, "metadata", "name"))
	}
	st, sp := batchv1.JobStatus{}.SwaggerDoc(), batchv1.JobSpec{}.SwaggerDoc()
	k.columns = defCols(def("Status", "string", "Status of the job."), def("Completions", "string", st["succeeded"]),
		def("Duration", "string", "Time required to complete the job."), ageColumn().def, containersCol, imagesCol, wide("Selector", "string", sp["selector"]))
	k.cells = typedCells(func(j *batchv1.Job, now time.Time) []any {
		var completions string
		switch p := deref(j.Spec.Parallelism); {
		case j.Spec.Completions != nil:
			completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
		case p > 1:
			completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
		default:
			completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
		}
		var took string
		switch {
		case j.Status.StartTime == nil:
		case j.Status.CompletionTime == nil:
			took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
		default:
			took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
		}
		names, images := containerCells(j.Spec.Template.Spec.Containers)
		return []any{jobStatus(j), completions, took, since(j.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
	})
}

// jobStatus is the Status column of a Job.
func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func defaultJob(j *batchv1.Job) {
	sp := &j.Spec
	if sp.Completions == nil && sp.Parallelism == nil {
		sp.Completions, sp.Parallelism = ptrTo[int32](1), ptrTo[int32](1)
	}
	if sp.Parallelism == nil {
		sp.Parallelism = ptrTo[int32](1)
	}
	if sp.BackoffLimit == nil {
		if sp.BackoffLimitPerIndex != nil {
			sp.BackoffLimit = ptrTo[int32](math.MaxInt32)
		} else {
			sp.BackoffLimit = ptrTo[int32](6)
		}
	}
	if sp.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = sp.Template.Labels
	}
	if sp.CompletionMode == nil {
		sp.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if sp.Suspend == nil {
		sp.Suspend = ptrTo(false)
	}
	if sp.PodReplacementPolicy == nil {
		if sp.PodFailurePolicy != nil {
			sp.PodReplacementPolicy = ptrTo(batchv1.Failed)
		} else {
			sp.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}
	}
	if sp.ManualSelector == nil {
		sp.ManualSelector = ptrTo(false)
	}
	defaultPodSpec(&sp.Template.Spec)
}

// The labels of Jobs' pods before batch.kubernetes.io/ ones (k8s.io/api
// does not name them).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// generateJobSelector is kube-apiserver's: the template gets the job-name
// and controller-uid labels (legacy and batch.kubernetes.io/ ones), the
// selector the controller-uid one.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for _, l := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := j.Spec.Template.Labels[l]; !ok {
			j.Spec.Template.Labels[l] = j.Name
		}
	}
	for _, l := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := j.Spec.Template.Labels[l]; !ok {
			j.Spec.Template.Labels[l] = string(j.UID)
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// validateGeneratedSelector checks, on create, the labels and selector
// generated for a Job without manualSelector.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector || j.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	md := field.NewPath("spec", "template", "metadata")
	hasLabel := func(key, want string) {
		switch v, ok := j.Spec.Template.Labels[key]; {
		case !ok:
			errs = append(errs, field.Required(md.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want)))
		case v != want:
			errs = append(errs, field.Invalid(md.Child("labels").Key(key), j.Spec.Template.Labels, fmt.Sprintf("must be '%s'", want)))
		}
	}
	uid := string(j.UID)
	hasLabel(legacyControllerUIDLabel, uid)
	hasLabel(legacyJobNameLabel, j.Name)
	hasLabel(batchv1.ControllerUidLabel, uid)
	hasLabel(batchv1.JobNameLabel, j.Name)
	expected := labels.Set{batchv1.ControllerUidLabel: uid, batchv1.JobNameLabel: j.Name, legacyControllerUIDLabel: uid, legacyJobNameLabel: j.Name}
	if s, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !s.Matches(expected) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec is the part of kube-apiserver's job spec validation
// Jobs and CronJobs' templates share.
func validateJobSpec(sp *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{sp.Parallelism, "parallelism"}, {sp.Completions, "completions"}, {sp.BackoffLimit, "backoffLimit"}, {sp.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}, {sp.BackoffLimitPerIndex, "backoffLimitPerIndex"}, {sp.MaxFailedIndexes, "maxFailedIndexes"}} {
		if f.v != nil {
			errs = append(errs, nonNegative(int64(*f.v), path.Child(f.name))...)
		}
		if f.name == "completions" && sp.ActiveDeadlineSeconds != nil {
			errs = append(errs, nonNegative(*sp.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds"))...)
		}
	}
	if sp.MaxFailedIndexes != nil && sp.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if m := sp.CompletionMode; m != nil {
		if *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(path.Child("completionMode"), string(*m), []string{"NonIndexed", "Indexed"}))
		}
		if *m == batchv1.IndexedCompletion && sp.Completions == nil {
			errs = append(errs, field.Required(path.Child("completions"), "when completion mode is Indexed"))
		}
	}
	if sp.CompletionMode == nil || *sp.CompletionMode == batchv1.NonIndexedCompletion {
		if sp.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(path.Child("backoffLimitPerIndex"), int64(*sp.BackoffLimitPerIndex), "requires indexed completion mode"))
		}
		if sp.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), int64(*sp.MaxFailedIndexes), "requires indexed completion mode"))
		}
	}
	if p := sp.PodReplacementPolicy; p != nil {
		switch {
		case sp.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), string(*p), []string{"Failed"}))
		case *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), string(*p), []string{"Failed", "TerminatingOrFailed"}))
		}
	}
	tmpl := path.Child("template")
	errs = append(errs, validatePodTemplate(&sp.Template, tmpl)...)
	restart := tmpl.Child("spec", "restartPolicy")
	switch rp := sp.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(restart, `valid values: "OnFailure", "Never"`))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(restart, string(rp), []string{"OnFailure", "Never"}))
	case sp.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(restart, string(rp), `only "Never" is supported when podFailurePolicy is specified`))
	}
	return errs
}

func validateJobStatus(st *batchv1.JobStatus) field.ErrorList {
	p := field.NewPath("status")
	errs := nonNegative(int64(st.Active), p.Child("active"))
	errs = append(errs, nonNegative(int64(st.Succeeded), p.Child("succeeded"))...)
	errs = append(errs, nonNegative(int64(st.Failed), p.Child("failed"))...)
	if st.Ready != nil {
		errs = append(errs, nonNegative(int64(*st.Ready), p.Child("ready"))...)
	}
	if st.Terminating != nil {
		errs = append(errs, nonNegative(int64(*st.Terminating), p.Child("terminating"))...)
	}
	return errs
}

// validateJobUpdate is what a Job's update may not change: its selector,
// completions (unless indexed and with parallelism), completion mode,
// pod failure and success policies, and its template unless suspended.
func validateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	switch {
	case !indexed:
		if !ptrEqual(j.Spec.Completions, old.Spec.Completions) {
			errs = append(errs, field.Invalid(spec.Child("completions"), int64(deref(j.Spec.Completions)), "field is immutable"))
		}
	case j.Spec.Completions != nil && !ptrEqual(j.Spec.Completions, old.Spec.Completions) && deref(j.Spec.Completions) != deref(j.Spec.Parallelism):
		errs = append(errs, field.Invalid(spec.Child("completions"), int64(*j.Spec.Completions), "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, immutable(j.Spec.Selector, old.Spec.Selector, spec.Child("selector"))...)
	if old.Spec.Suspend == nil || !*old.Spec.Suspend {
		errs = append(errs, immutable(j.Spec.Template, old.Spec.Template, spec.Child("template"))...)
	}
	if !ptrEqual(j.Spec.CompletionMode, old.Spec.CompletionMode) {
		errs = append(errs, field.Invalid(spec.Child("completionMode"), string(deref(j.Spec.CompletionMode)), "field is immutable"))
	}
	errs = append(errs, immutable(j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, spec.Child("podFailurePolicy"))...)
	errs = append(errs, immutable(j.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex, spec.Child("backoffLimitPerIndex"))...)
	errs = append(errs, immutable(j.Spec.ManagedBy, old.Spec.ManagedBy, spec.Child("managedBy"))...)
	errs = append(errs, immutable(j.Spec.SuccessPolicy, old.Spec.SuccessPolicy, spec.Child("successPolicy"))...)
	return append(errs, validateJobStatusUpdate(j, old)...)
}

// validateJobStatusUpdate is the part of kube-apiserver's status update
// rules a Job controller (or a test playing one) meets most: counters do
// not decrease, terminal conditions stay, a finished Job has no active
// pods and has a completion time, which then does not change. On the main
// resource the status is the old one: nothing here fails.
func validateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	st := field.NewPath("status")
	var errs field.ErrorList
	cond := func(job *batchv1.Job, t batchv1.JobConditionType) bool {
		for _, c := range job.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	finished := cond(j, batchv1.JobComplete) || cond(j, batchv1.JobFailed)
	finishedChanged := finished != (cond(old, batchv1.JobComplete) || cond(old, batchv1.JobFailed))
	if finished && j.Status.Active > 0 && (finishedChanged || j.Status.Active != old.Status.Active) {
		errs = append(errs, field.Invalid(st.Child("active"), int64(j.Status.Active), "active>0 is invalid for finished job"))
	}
	completeChanged := cond(j, batchv1.JobComplete) != cond(old, batchv1.JobComplete)
	if (completeChanged || !ptrTimeEqual(j.Status.CompletionTime, old.Status.CompletionTime)) && cond(j, batchv1.JobComplete) && j.Status.CompletionTime == nil {
		errs = append(errs, field.Required(st.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if r := j.Status.Ready; r != nil && *r > j.Status.Active && (!ptrEqual(r, old.Status.Ready) || j.Status.Active != old.Status.Active) {
		errs = append(errs, field.Invalid(st.Child("ready"), int64(*r), "cannot set more ready pods than active"))
	}
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if cond(old, t) && !cond(j, t) {
			errs = append(errs, field.Invalid(st.Child("conditions"), field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	if j.Status.Failed < old.Status.Failed {
		errs = append(errs, field.Invalid(st.Child("failed"), int64(j.Status.Failed), "cannot decrease the failed counter"))
	}
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if (!indexed || !ptrEqual(j.Spec.Completions, j.Spec.Parallelism)) && j.Status.Succeeded < old.Status.Succeeded {
		errs = append(errs, field.Invalid(st.Child("succeeded"), int64(j.Status.Succeeded), "cannot decrease the succeeded counter"))
	}
	if c, oc := j.Status.CompletionTime, old.Status.CompletionTime; c != nil && oc != nil && !c.Equal(oc) {
		errs = append(errs, field.Invalid(st.Child("completionTime"), c, "field is immutable"))
	}
	return errs
}

func ptrTimeEqual(a, b *metav1.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(b)
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// nameDNSLabelWarning is the warning of Jobs and CronJobs whose name is
// not a DNS label (it goes into pods' names and hostnames).
func nameDNSLabelWarning(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

func setupCronJob(k *kind) {
	k.defaults = typedDefaults(func(cj *batchv1.CronJob) {
		sp := &cj.Spec
		if sp.ConcurrencyPolicy == "" {
			sp.ConcurrencyPolicy = batchv1.AllowConcurrent
		}
		if sp.Suspend == nil {
			sp.Suspend = ptrTo(false)
		}
		if sp.SuccessfulJobsHistoryLimit == nil {
			sp.SuccessfulJobsHistoryLimit = ptrTo[int32](3)
		}
		if sp.FailedJobsHistoryLimit == nil {
			sp.FailedJobsHistoryLimit = ptrTo[int32](1)
		}
		defaultPodSpec(&sp.JobTemplate.Spec.Template.Spec)
	})
	k.validate = typedValidation(func(cj *batchv1.CronJob) field.ErrorList {
		return validateCronJob(cj, nil)
	})
	k.validateCreate = func(obj map[string]any) field.ErrorList {
		if name := jsontree.Str(obj, "metadata", "name"); len(name) > validation.DNS1035LabelMaxLength-11 {
			return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, "must be no more than 52 characters")}
		}
		return nil
	}
	k.warnings = func(obj map[string]any) []string {
		return nameDNSLabelWarning(jsontree.Str(obj, "metadata", "name"))
	}
	sp, st := batchv1.CronJobSpec{}.SwaggerDoc(), batchv1.CronJobStatus{}.SwaggerDoc()
	k.columns = defCols(def("Schedule", "string", sp["schedule"]), def("Timezone", "string", sp["timeZone"]), def("Suspend", "boolean", sp["suspend"]),
		def("Active", "integer", st["active"]), def("Last Schedule", "string", st["lastScheduleTime"]), ageColumn().def,
		containersCol, imagesCol, wide("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]))
	k.cells = typedCells(func(cj *batchv1.CronJob, now time.Time) []any {
		last := "<none>"
		if t := cj.Status.LastScheduleTime; t != nil {
			last = since(*t, now)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		suspend := "<unset>"
		if cj.Spec.Suspend != nil {
			suspend = printBool(*cj.Spec.Suspend)
		}
		names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []any{cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, since(cj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}
	})
}

// printBool is kube's printers' "True"/"False".
func printBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateCronJob is kube-apiserver's CronJob spec validation; old is the
// spec before an update (nil on create).
func validateCronJob(cj *batchv1.CronJob, old *batchv1.CronJobSpec) field.ErrorList {
	spec := field.NewPath("spec")
	sp := &cj.Spec
	var errs field.ErrorList
	if sp.Schedule == "" {
		errs = append(errs, field.Required(spec.Child("schedule"), ""))
	} else {
		if _, err := parseCronSchedule(sp.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("schedule"), sp.Schedule, err.Error()))
		}
		if strings.Contains(sp.Schedule, "TZ") {
			errs = append(errs, field.Invalid(spec.Child("schedule"), sp.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if sp.StartingDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*sp.StartingDeadlineSeconds, spec.Child("startingDeadlineSeconds"))...)
	}
	if tz := sp.TimeZone; tz != nil {
		errs = append(errs, validateTimeZone(*tz, spec.Child("timeZone"))...)
	}
	cp := spec.Child("concurrencyPolicy")
	switch sp.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, string(sp.ConcurrencyPolicy), []string{"Allow", "Forbid", "Replace"}))
	}
	jt := spec.Child("jobTemplate", "spec")
	errs = append(errs, validateJobSpec(&sp.JobTemplate.Spec, jt)...)
	if sp.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jt.Child("selector"), sp.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := sp.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(jt.Child("manualSelector"), true, []string{"nil", "false"}))
	}
	if v := sp.SuccessfulJobsHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), spec.Child("successfulJobsHistoryLimit"))...)
	}
	if v := sp.FailedJobsHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), spec.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// parseCronSchedule parses a schedule as kube-apiserver does (robfig/cron's
// standard parser; its panics are errors).
func parseCronSchedule(schedule string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

func validateTimeZone(tz string, p *field.Path) field.ErrorList {
	if tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}
