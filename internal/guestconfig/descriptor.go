package guestconfig

import (
	"fmt"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The checker's .proto is not published. This is the subset tcpxogen
// understands, declared in Go so that no protoc or generated code is needed.
//
// Field and enum numbers are this package's own: the text format names
// fields and enum values, so the numbers only have to be unique. proto2
// gives every field presence, so that a missing check_policy or value is
// told apart from an explicit zero or empty one.

// Enum numbers of the declared CheckPolicy enum. policyUnspecified is the
// zero value a proto enum conventionally has; a file that spells it out is
// rejected like one that leaves the policy out.
const (
	policyUnspecified protoreflect.EnumNumber = 0
	policyEnforced    protoreflect.EnumNumber = 1
	policyRecommended protoreflect.EnumNumber = 2
)

// fieldNames are the field names the descriptor declares, for "did you
// mean" suggestions.
var fieldNames = []string{"env_var", "check_policy", "name", "value"}

func fileDescriptorProto() *descriptorpb.FileDescriptorProto {
	optional := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("guest_config_checker.proto"),
		Package: proto.String("guest_config_checker"),
		Syntax:  proto.String("proto2"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("CheckPolicy"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("POLICY_UNSPECIFIED"), Number: proto.Int32(int32(policyUnspecified))},
				{Name: proto.String(string(Enforced)), Number: proto.Int32(int32(policyEnforced))},
				{Name: proto.String(string(Recommended)), Number: proto.Int32(int32(policyRecommended))},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{
			{
				Name: proto.String("EnvVar"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("check_policy"), Number: proto.Int32(1), Label: optional,
						Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".guest_config_checker.CheckPolicy")},
					{Name: proto.String("name"), Number: proto.Int32(2), Label: optional, Type: str},
					{Name: proto.String("value"), Number: proto.Int32(3), Label: optional, Type: str},
				},
			},
			{
				Name: proto.String("GuestConfigValidatorConfig"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("env_var"), Number: proto.Int32(1),
						Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
						Type:  descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".guest_config_checker.EnvVar")},
				},
			},
		},
	}
}

// descriptor is the GuestConfigValidatorConfig message descriptor, built
// once. It fails only if the declaration above is wrong, which every test
// of this package would show.
var descriptor = sync.OnceValues(func() (protoreflect.MessageDescriptor, error) {
	fd, err := protodesc.NewFile(fileDescriptorProto(), nil)
	if err != nil {
		return nil, fmt.Errorf("internal/guestconfig declares an invalid message descriptor: %w", err)
	}
	md := fd.Messages().ByName("GuestConfigValidatorConfig")
	if md == nil || string(md.FullName()) != MessageName {
		return nil, fmt.Errorf("internal/guestconfig's descriptor lacks %s", MessageName)
	}
	return md, nil
})

// envVarDescs holds the EnvVar field descriptors Parse reads.
type envVarDescs struct{ policy, name, value protoreflect.FieldDescriptor }

// envVarFields returns the EnvVar fields of md, the descriptor.
func envVarFields(md protoreflect.MessageDescriptor) envVarDescs {
	ev := md.Fields().ByName("env_var").Message().Fields()
	return envVarDescs{policy: ev.ByName("check_policy"), name: ev.ByName("name"), value: ev.ByName("value")}
}

// policyName names an enum number of the check_policy field f for a
// message: its declared name, or the number itself.
func policyName(f protoreflect.FieldDescriptor, n protoreflect.EnumNumber) string {
	if v := f.Enum().Values().ByNumber(n); v != nil {
		return string(v.Name())
	}
	return strconv.Itoa(int(n))
}
