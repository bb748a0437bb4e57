package provider

// Fields reads the fields of a channel's config one after another and
// keeps the first error: a constructor reads every field it needs, then
// checks Err once. After an error, every read returns "".
type Fields struct {
	config map[string]any
	err    error
}

// ReadFields starts reading config.
func ReadFields(config map[string]any) *Fields {
	return &Fields{config: config}
}

// String reads config[field] as ConfigString does.
func (f *Fields) String(field string, required bool) string {
	return f.keep(func() (string, error) { return ConfigString(f.config, field, required) })
}

// BaseURL reads the base URL override config[field] as ConfigBaseURL
// does: def when absent.
func (f *Fields) BaseURL(field, def string) string {
	return f.keep(func() (string, error) { return ConfigBaseURL(f.config, field, def) })
}

// From reads an email provider's sender as ConfigFrom does.
func (f *Fields) From() string {
	return f.keep(func() (string, error) { return ConfigFrom(f.config) })
}

// Fail records err, a provider's own check of a field, unless an earlier
// error is kept.
func (f *Fields) Fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// Err is the first error met, naming its field; nil when every read
// succeeded.
func (f *Fields) Err() error {
	return f.err
}

func (f *Fields) keep(read func() (string, error)) string {
	if f.err != nil {
		return ""
	}
	v, err := read()
	f.err = err
	return v
}
