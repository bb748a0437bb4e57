package delivery

// NewSMTPProvider exposes the email-smtp provider's constructor to the
// external tests, which stand it in for another email entry's provider.
var NewSMTPProvider = newSMTPProvider
