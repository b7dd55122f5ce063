package uixml_test

import (
	"fmt"

	"github.com/droidgo/droidgo/uixml"
)

func ExampleParse() {
	dump := `ERROR: could not get idle state.
<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">
<node text="" class="android.widget.FrameLayout" package="com.android.settings" clickable="false" bounds="[0,0][1080,2400]">
 <node text="" class="android.widget.LinearLayout" package="com.android.settings" clickable="true" bounds="[0,300][1080,460]">
  <node text="Wi-Fi" class="android.widget.TextView" package="com.android.settings" bounds="[40,320][400,400]"/>
  <node text="" resource-id="android:id/switch_widget" class="android.widget.Switch" package="com.android.settings" checkable="true" checked="true" bounds="[880,340][1040,420]"/>
 </node>
 <node text="" resource-id="com.android.settings:id/search" class="android.widget.EditText" package="com.android.settings" clickable="true" focused="true" hint="Search settings" bounds="[40,100][1040,200]"/>
</node></hierarchy>UI hierchary dumped to: /dev/tty`
	s, err := uixml.Parse([]byte(dump))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(s.Prompt())
	e, _, _ := s.ElementByIndex(0)
	fmt.Printf("tap element 0 at %d,%d; valid indices %s\n", e.X, e.Y, s.IndexRange())
	// Output:
	// Screen of com.android.settings, 1080x2400:
	// [0] switch "Wi-Fi" on
	// [1] field "Search settings" (editable, focused)
	// tap element 0 at 540,380; valid indices 0-1
}
