package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// bulkDecodeCases are bodies and items the fast decoders of a bulk
// request must read exactly as the strict decoders do: accepted ones and
// refused ones, duplicates, case variants, nulls and wrong types.
var bulkDecodeCases = []string{
	`{"subscriberId":"a","contacts":{"email":["a@x.io"]},"locale":"fr","attributes":{"p":1},"topics":["t1","t2"]}`,
	`{"subscriberId":"a"}`,
	` {"subscriberId":"a","locale":null,"attributes":null,"contacts":null,"topics":null} `,
	`{"subscriberId":"a","contacts":{"email":["a@x.io"]},"contacts":{"sms":["+14155550123"]}}`,
	`{"subscriberId":"a","subscriberId":"b","topics":["x"],"topics":["y"]}`,
	`{"SubscriberId":"a"}`,
	`{"subscriberid":"a"}`,
	`{"subscriberId":5}`,
	`{"subscriberId":"a","topics":"t"}`,
	`{"subscriberId":"a","contacts":[]}`,
	`{"subscriberId":"a","contact":{}}`,
	`{"subscriberId":"a","cont\u0061cts":{"email":["a@x.io"]}}`,
	`{"subscriberId":"a\u0000b"}`,
	`{}`,
	`[]`,
	`5`,
	`null`,
	`"x"`,
	`{"subscriberId":"a"`,
	`{"subscribers":[{"subscriberId":"a"},5,null,[]]}`,
	`{"subscribers":[],"subscribers":[{"subscriberId":"b"}]}`,
	`{"subscribers":null}`,
	`{"subscribers":{}}`,
	`{"subscribers":[1],"extra":1}`,
	`{"Subscribers":[1]}`,
	` {"subscribers" : [ {"a" : 1} , 2 ] } `,
	`{"subscriberId":"a}\"","topics":["]",",","\\"],"attributes":{"k":[1,{"x":"}"}],"n":-1.5e3,"b":true}}`,
	`{"subscribers":[{"subscriberId":"a"}],"subscribers":[true,false,-1.5e3,"]"]}`,
	`{"subscribers":[]}x`,
	`{"subscribers":[]}}`,
	`{"subscribers":[],}`,
	`{"subscribers" []}`,
}

// TestBulkFastDecodersTakeTheFastPath: an ordinary body and item are read
// by the fast paths, not handed to the strict decoders.
func TestBulkFastDecodersTakeTheFastPath(t *testing.T) {
	var list []json.RawMessage
	if !decodeList([]byte(` {"subscribers" : [ {"a":"}"} , 2 ] } `), "subscribers", &list) || len(list) != 2 {
		t.Fatalf("decodeList refused an ordinary body: %q", list)
	}
	var keys []string
	item := []byte(`{"subscriberId":"a}\"","topics":["]"],"attributes":{"k":[1,{"x":"}"}],"n":-1.5e3}}`)
	if !objectKeys(item, func(k, v []byte) bool { keys = append(keys, string(k)+"="+string(v)); return true }) {
		t.Fatal("objectKeys refused an item")
	}
	want := []string{`subscriberId="a}\""`, `topics=["]"]`, `attributes={"k":[1,{"x":"}"}],"n":-1.5e3}`}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("objectKeys walked %q, want %q", keys, want)
	}
}

// TestBulkFastDecodersMatchStrict: decodeSubscriberItem and decodeList
// (the bulk request's fast paths) read every case as decodeItem and
// decodeBytes read it: the same value, or the same error.
func TestBulkFastDecodersMatchStrict(t *testing.T) {
	for _, c := range bulkDecodeCases {
		checkBulkDecoders(t, []byte(c))
	}
}

// FuzzBulkDecoders checks the same over arbitrary bytes.
func FuzzBulkDecoders(f *testing.F) {
	for _, c := range bulkDecodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkBulkDecoders(t, data) })
}

func checkBulkDecoders(t *testing.T, data []byte) {
	t.Helper()
	var fast, strict bulkSubscriberItem
	ferr, serr := decodeSubscriberItem(data, &fast), decodeItem(data, &strict)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || serr == nil && !reflect.DeepEqual(fast, strict) {
		t.Errorf("item %q: fast %+v %v, strict %+v %v", data, fast, ferr, strict, serr)
	}
	var list []json.RawMessage
	var req struct {
		Subscribers []json.RawMessage `json:"subscribers"`
	}
	if decodeList(data, "subscribers", &list) {
		if err := decodeBytes(data, &req); err != nil || !reflect.DeepEqual(list, req.Subscribers) {
			t.Errorf("body %q: fast %q, strict %q %v", data, list, req.Subscribers, err)
		}
	}
}
